import {
  EVERY_SOURCE,
  type GraphEdge,
  type GraphIdentity,
  type GraphProxy,
  type GraphService,
  type MeshGraph,
} from '../graph-types.js';
import { h, table } from './dom.js';
import { hint, nameOf } from './names.js';
import {
  egressEdgeView,
  externalView,
  ingressEdgeView,
  ingressSourceView,
  outsideSummary,
} from './panel-outside.js';

/** Renders the side panel for the selected element id (or a hint when nothing, or something gone, is selected). */
export function renderPanel(panel: HTMLElement, g: MeshGraph, selected: string | undefined): void {
  panel.replaceChildren(...content(g, selected));
}

function content(g: MeshGraph, id: string | undefined): Node[] {
  if (id === undefined)
    return [
      hint('Click a service, proxy, destination or edge to see its policies, endpoints and configuration.'),
    ];
  const svc = g.services.find((s) => s.id === id);
  if (svc) return serviceView(g, svc);
  const ident = g.identities.find((i) => i.id === id);
  if (ident) return identityView(g, ident);
  for (const holder of [...g.services, ...g.identities]) {
    const p = holder.proxies.find((x) => x.id === id);
    if (p) return proxyView(g, p, holder);
  }
  const ext = g.external.find((x) => x.id === id);
  if (ext) return externalView(g, ext);
  const src = g.ingressSources.find((x) => x.id === id);
  if (src) return ingressSourceView(g, src);
  const edge = g.edges.find((e) => e.id === id);
  if (edge?.kind === 'egress') return egressEdgeView(g, edge);
  if (edge?.kind === 'ingress') return ingressEdgeView(g, edge);
  if (edge) return edgeView(g, edge);
  if (id.startsWith('ns:')) return namespaceView(g, id.slice(3));
  if (id.startsWith('zone:'))
    return [hint('Destinations and sources outside the mesh: click one, or an edge, for its policy.')];
  return [hint('The selected element is no longer in the mesh.')];
}

function stateChip(state: string): HTMLElement {
  return h('span', { class: `state ${state}` }, state);
}

function serviceView(g: MeshGraph, s: GraphService): Node[] {
  const out: Node[] = [
    h('h2', {}, s.key),
    h('p', { class: 'sub' }, s.fqdn, s.clusterIP ? ` · ${s.clusterIP}` : ''),
    h('p', { class: 'sub' }, `identities: ${s.identities.join(', ') || 'none (no pods)'}`),
    h('h3', {}, 'Who may call it'),
    ...policySection(g, s),
  ];
  if (s.split) {
    const total = s.split.reduce((sum, b) => sum + b.weight, 0);
    out.push(
      h('h3', {}, 'TrafficSplit backends'),
      table(
        ['backend', 'weight', 'share'],
        s.split.map((b) => [
          b.service,
          String(b.weight),
          total > 0 ? `${Math.round((b.weight / total) * 100)}%` : '–',
        ]),
      ),
    );
  }
  const outbound = g.edges.filter((e) => e.kind === 'allow' && e.source === s.id);
  if (outbound.length > 0) {
    out.push(
      h('h3', {}, 'May call'),
      h('ul', {}, ...outbound.map((e) => h('li', {}, `${nameOf(g, e.target)} (${e.label})`))),
    );
  }
  out.push(...outsideSummary(g, s.id));
  out.push(
    h('h3', {}, 'Endpoints'),
    s.endpoints.length === 0
      ? hint('none')
      : table(
          ['address', 'pod', 'ready'],
          s.endpoints.map((e) => [`${e.ip}:${e.port}`, e.pod ?? '', e.ready ? 'yes' : 'no']),
        ),
    h('h3', {}, 'Proxies'),
    ...(s.proxies.length === 0 ? [hint('none')] : s.proxies.map(proxySummary)),
  );
  return out;
}

function policySection(g: MeshGraph, s: GraphService): Node[] {
  if (g.permissive) return [h('p', {}, 'Any meshed service (permissive mode).')];
  return s.ports.map((p) =>
    h(
      'div',
      {},
      h('b', {}, `port ${p.port}`),
      ` ${p.name ? `${p.name}, ` : ''}${p.protocol} → target ${p.targetPort}`,
      ...(p.rules.length === 0
        ? [hint('nobody: no TrafficTarget allows it (deny by default)')]
        : p.rules.map((r) =>
            h(
              'div',
              { class: 'rule' },
              h(
                'div',
                {},
                'from ',
                h('b', {}, r.sources === EVERY_SOURCE ? EVERY_SOURCE : r.sources.join(', ')),
              ),
              h('div', {}, `routes: ${r.routes.join('; ')}`),
              h('div', { class: 'origin' }, r.origin),
            ),
          )),
    ),
  );
}

function proxySummary(p: GraphProxy): HTMLElement {
  return h(
    'div',
    { class: 'rule' },
    h('div', {}, stateChip(p.state), ' ', h('b', {}, p.label), p.kind ? ` (${p.kind})` : ''),
    p.types.length > 0
      ? typesTable(p)
      : h('div', { class: 'origin' }, p.uuid ? 'not connected' : 'no proxy connected'),
  );
}

function typesTable(p: GraphProxy): HTMLElement {
  return table(
    ['type', 'sent', 'acked', 'state'],
    p.types.map((t) => [t.type, t.sent ?? '–', t.acked ?? '–', stateChip(t.syncState)]),
  );
}

function proxyView(g: MeshGraph, p: GraphProxy, holder: GraphService | GraphIdentity): Node[] {
  const rows: [string, string][] = [];
  if (p.identity) rows.push(['identity', p.identity]);
  if (p.kind) rows.push(['kind', p.kind]);
  if (p.uuid) rows.push(['uuid', p.uuid]);
  if (p.pod) rows.push(['pod', `${p.pod.namespace}/${p.pod.name}`]);
  if (p.streamId) rows.push(['stream', p.streamId]);
  if (p.connectedAt) rows.push(['connected', p.connectedAt]);
  if (p.disconnectedAt) rows.push(['disconnected', p.disconnectedAt]);
  const out: Node[] = [
    h('h2', {}, p.label),
    h('p', {}, stateChip(p.state), ` proxy of ${'fqdn' in holder ? holder.key : `identity ${holder.key}`}`),
    table(['', ''], rows),
    h('h3', {}, 'Configuration (per xDS type)'),
    p.types.length > 0
      ? typesTable(p)
      : hint(p.uuid ? 'not connected' : 'no proxy has connected for this pod'),
  ];
  for (const t of p.types)
    if (t.lastNack) out.push(h('p', { class: 'nack' }, `${t.type} NACK: ${t.lastNack}`));
  if ('fqdn' in holder) out.push(h('h3', {}, `Who may call ${holder.key}`), ...policySection(g, holder));
  return out;
}

function identityView(g: MeshGraph, i: GraphIdentity): Node[] {
  const outbound = g.edges.filter((e) => e.kind === 'allow' && e.source === i.id);
  return [
    h('h2', {}, `identity ${i.key}`),
    h('p', { class: 'sub' }, 'A service account that backs no service (a client only).'),
    h('h3', {}, 'May call'),
    outbound.length === 0
      ? hint(g.permissive ? 'any meshed service (permissive mode)' : 'nothing')
      : h('ul', {}, ...outbound.map((e) => h('li', {}, `${nameOf(g, e.target)} (${e.label})`))),
    ...outsideSummary(g, i.id),
    h('h3', {}, 'Proxies'),
    ...(i.proxies.length === 0 ? [hint('none')] : i.proxies.map(proxySummary)),
  ];
}

function edgeView(g: MeshGraph, e: GraphEdge): Node[] {
  if (e.kind === 'split') {
    return [
      h('h2', {}, 'TrafficSplit'),
      h('p', {}, `${nameOf(g, e.source)} → ${nameOf(g, e.target)}`),
      h('p', {}, `weight ${e.weight ?? 0} (${e.percent ?? 0}% of the apex's traffic)`),
    ];
  }
  if (e.kind === 'traffic') {
    return [
      h('h2', {}, 'Reported traffic'),
      h('p', {}, `${nameOf(g, e.source)} → ${nameOf(g, e.target)}`),
      ...trafficView(e),
    ];
  }
  return [
    h('h2', {}, 'Allowed traffic'),
    h('p', {}, `${nameOf(g, e.source)} → ${nameOf(g, e.target)}`),
    ...trafficView(e),
    h('h3', {}, 'TrafficTargets'),
    h('ul', {}, ...(e.targets ?? []).map((t) => h('li', {}, t))),
    h('h3', {}, 'Ports and routes'),
    table(
      ['port', 'routes'],
      (e.ports ?? []).map((p) => [String(p.port), p.routes.join('; ')]),
    ),
  ];
}

/** What the source's sidecars reported for the edge over the controller's window. */
function trafficView(e: GraphEdge): Node[] {
  const t = e.traffic;
  if (t === undefined) return [];
  const ms = (v: number | undefined) => (v === undefined ? '-' : `${v} ms`);
  return [
    h('h3', {}, `Traffic, last ${t.seconds} s`),
    table(
      ['requests/s', 'success', 'p50', 'p99', 'requests', '5xx', 'proxies'],
      [
        [
          String(t.rps),
          t.successPercent === undefined ? 'no responses' : `${t.successPercent}%`,
          ms(t.p50Ms),
          ms(t.p99Ms),
          String(t.requests),
          String(t.errors),
          String(t.proxies),
        ],
      ],
    ),
  ];
}

function namespaceView(g: MeshGraph, ns: string): Node[] {
  const services = g.services.filter((s) => s.namespace === ns);
  return [
    h('h2', {}, `namespace ${ns}`),
    h('h3', {}, 'Services'),
    h('ul', {}, ...services.map((s) => h('li', {}, s.name))),
  ];
}
