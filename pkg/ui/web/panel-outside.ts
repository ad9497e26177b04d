// The side panel for what crosses the mesh's boundary: destinations outside
// the mesh (Egress), ingress sources (IngressBackend), and their edges.
import type {
  GraphEdge,
  GraphExternal,
  GraphIngressSource,
  GraphProblem,
  MeshGraph,
} from '../graph-types.js';
import { h, table } from './dom.js';
import { hint, nameOf } from './names.js';

const ANYTHING = 'any'; // the word shown for an empty list, not a TypeScript any

function list(items: readonly string[], none = ANYTHING): string {
  return items.length === 0 ? none : items.join(', ');
}

function problemList(problems: readonly GraphProblem[] | undefined): Node[] {
  if (problems === undefined || problems.length === 0) return [];
  return [
    h('h3', {}, 'Problems in force'),
    h(
      'ul',
      {},
      ...problems.map((p) =>
        h(
          'li',
          { class: `problem ${p.type}` },
          h('b', {}, `${p.kind ?? 'document'} ${p.namespace ? `${p.namespace}/` : ''}${p.name ?? ''}`),
          `: ${p.reason}`,
        ),
      ),
    ),
  ];
}

function egressTable(e: GraphEdge): HTMLElement {
  return table(
    ['port', 'protocol', 'addresses', 'requests', 'Egress'],
    (e.egress ?? []).map((p) => [
      String(p.port),
      p.protocol,
      list(p.ipRanges),
      p.routes ? p.routes.join('; ') : '–',
      p.egresses.join(', '),
    ]),
  );
}

function ingressTable(e: GraphEdge): HTMLElement {
  return table(
    ['port', 'how', 'hosts and paths', 'IngressBackend'],
    (e.ingress ?? []).map((p) => [String(p.targetPort), p.how, p.routes.join('; '), p.ingressBackend]),
  );
}

export function egressEdgeView(g: MeshGraph, e: GraphEdge): Node[] {
  return [
    h('h2', {}, 'Egress: allowed out of the mesh'),
    h('p', {}, `${nameOf(g, e.source)} → ${nameOf(g, e.target)}`),
    h('h3', {}, 'Ports, protocols and Egress objects'),
    egressTable(e),
    ...problemList(e.problems),
  ];
}

export function ingressEdgeView(g: MeshGraph, e: GraphEdge): Node[] {
  const out: Node[] = [
    h('h2', {}, 'Ingress: admitted into the mesh'),
    h('p', {}, `${nameOf(g, e.source)} → ${nameOf(g, e.target)}`),
    h('h3', {}, 'Backend ports'),
    ingressTable(e),
  ];
  for (const p of e.ingress ?? []) {
    out.push(
      h(
        'div',
        { class: 'rule' },
        h('div', {}, h('b', {}, `port ${p.targetPort}`), ` ${p.how}, IngressBackend ${p.ingressBackend}`),
        p.protocol === 'https'
          ? h(
              'div',
              {},
              `client certificate SANs: ${list(p.principals, p.clientCert === 'skip' ? 'not checked' : 'any the mesh CA issued')}`,
            )
          : undefined,
        p.protocol === 'https' ? h('div', {}, `SNI: ${list(p.sniHosts)}`) : undefined,
        h('div', {}, `hosts and paths: ${p.routes.join('; ')}`),
        h('div', {}, `requests: ${p.requests.join('; ')}`),
        h('div', { class: 'origin' }, `Ingress: ${list(p.ingresses, 'none (any host and path)')}`),
      ),
    );
  }
  out.push(...problemList(e.problems));
  return out;
}

export function externalView(g: MeshGraph, x: GraphExternal): Node[] {
  const inbound = g.edges.filter((e) => e.kind === 'egress' && e.target === x.id);
  const what =
    x.kind === 'host'
      ? 'A host outside the mesh (HTTP Host header, TLS SNI).'
      : x.kind === 'cidr'
        ? 'An address range outside the mesh.'
        : 'Any address outside the mesh (a rule naming no host or range).';
  const out: Node[] = [h('h2', {}, x.label), h('p', { class: 'sub' }, what)];
  if (x.passthrough !== undefined) {
    out.push(h('p', {}, x.passthrough, ', so no Egress edge is drawn.'));
    if (x.moot && x.moot.length > 0)
      out.push(
        h('h3', {}, 'Egress objects without effect meanwhile'),
        h('ul', {}, ...x.moot.map((m) => h('li', {}, m))),
      );
    return out;
  }
  out.push(
    h('h3', {}, 'Who may reach it'),
    inbound.length === 0
      ? hint('nobody')
      : h('ul', {}, ...inbound.map((e) => h('li', {}, `${nameOf(g, e.source)} (${e.label})`))),
  );
  for (const e of inbound)
    out.push(h('h3', {}, `from ${nameOf(g, e.source)}`), egressTable(e), ...problemList(e.problems));
  return out;
}

export function ingressSourceView(g: MeshGraph, s: GraphIngressSource): Node[] {
  const outbound = g.edges.filter((e) => e.kind === 'ingress' && e.source === s.id);
  const out: Node[] = [
    h('h2', {}, s.label),
    h(
      'p',
      { class: 'sub' },
      s.kind === 'IPRange' ? 'An IngressBackend IPRange source.' : 'An IngressBackend Service source.',
      ` Addresses: ${s.cidrs.join(', ')}`,
    ),
    h('h3', {}, 'May connect to'),
    outbound.length === 0
      ? hint('nothing')
      : h('ul', {}, ...outbound.map((e) => h('li', {}, `${nameOf(g, e.target)} (${e.label})`))),
  ];
  for (const e of outbound)
    out.push(h('h3', {}, nameOf(g, e.target)), ingressTable(e), ...problemList(e.problems));
  return out;
}

/** A service's or identity's egress and ingress, for its own panel. */
export function outsideSummary(g: MeshGraph, nodeId: string): Node[] {
  const out: Node[] = [];
  const egress = g.edges.filter((e) => e.kind === 'egress' && e.source === nodeId);
  if (egress.length > 0)
    out.push(
      h('h3', {}, 'May reach outside the mesh'),
      h('ul', {}, ...egress.map((e) => h('li', {}, `${nameOf(g, e.target)} (${e.label})`))),
    );
  const ingress = g.edges.filter((e) => e.kind === 'ingress' && e.target === nodeId);
  if (ingress.length > 0)
    out.push(
      h('h3', {}, 'Admitted from outside the mesh'),
      h('ul', {}, ...ingress.map((e) => h('li', {}, `${nameOf(g, e.source)} (${e.label})`))),
    );
  const feeds = g.edges.filter((e) => e.kind === 'ingress' && e.source === nodeId);
  if (feeds.length > 0)
    out.push(
      h('h3', {}, 'Admitted as an ingress source into'),
      h('ul', {}, ...feeds.map((e) => h('li', {}, `${nameOf(g, e.target)} (${e.label})`))),
    );
  return out;
}
