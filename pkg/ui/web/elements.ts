import type cytoscape from 'cytoscape';
import type { GraphEdge, MeshGraph } from '../graph-types.js';

export const EGRESS_ZONE = 'zone:egress';
export const INGRESS_ZONE = 'zone:ingress';

/**
 * The graph as cytoscape elements, parents before children and nodes before
 * edges (the order cytoscape needs to add them): namespaces are compound nodes
 * holding services and identities, which hold their proxies; destinations and
 * sources outside the mesh sit in a zone box each.
 */
export function toElements(g: MeshGraph): cytoscape.ElementDefinition[] {
  const out: cytoscape.ElementDefinition[] = [];
  for (const ns of g.namespaces)
    out.push({ group: 'nodes', data: { id: `ns:${ns}`, label: ns, kind: 'namespace' } });
  for (const s of g.services) {
    out.push({
      group: 'nodes',
      data: {
        id: s.id,
        parent: `ns:${s.namespace}`,
        label: s.split ? `${s.name} (split)` : s.name,
        kind: 'service',
      },
    });
  }
  for (const i of g.identities) {
    out.push({
      group: 'nodes',
      data: { id: i.id, parent: `ns:${i.namespace}`, label: `sa ${i.name}`, kind: 'identity' },
    });
  }
  for (const holder of [...g.services, ...g.identities]) {
    for (const p of holder.proxies) {
      out.push({
        group: 'nodes',
        data: { id: p.id, parent: holder.id, label: p.label, kind: 'proxy', state: p.state },
      });
    }
  }
  // Outside the mesh: one box for egress destinations, one for ingress sources.
  if (g.external.length > 0)
    out.push({ group: 'nodes', data: { id: EGRESS_ZONE, label: 'outside the mesh: egress', kind: 'zone' } });
  if (g.ingressSources.length > 0)
    out.push({
      group: 'nodes',
      data: { id: INGRESS_ZONE, label: 'outside the mesh: ingress', kind: 'zone' },
    });
  for (const x of g.external) {
    out.push({
      group: 'nodes',
      data: { id: x.id, parent: EGRESS_ZONE, label: x.label, kind: 'external', externalKind: x.kind },
    });
  }
  for (const s of g.ingressSources) {
    out.push({
      group: 'nodes',
      data: { id: s.id, parent: INGRESS_ZONE, label: s.label, kind: 'ingress-source', sourceKind: s.kind },
    });
  }
  for (const e of g.edges) {
    out.push({
      group: 'edges',
      data: {
        id: e.id,
        source: e.source,
        target: e.target,
        label: e.label,
        edgeKind: e.kind,
        problem: (e.problems ?? []).length > 0 ? 'yes' : 'no',
        // Reported traffic: styled by success (style.ts); the figures are in the label and panel.
        health: trafficHealth(e),
      },
    });
  }
  return out;
}

/** `none` without reported traffic; else by success rate: ≥ 99 % good, ≥ 90 % degraded, below bad. */
export function trafficHealth(e: GraphEdge): 'none' | 'idle' | 'good' | 'degraded' | 'bad' {
  const t = e.traffic;
  if (t === undefined) return 'none';
  if (t.successPercent === undefined) return 'idle';
  return t.successPercent >= 99 ? 'good' : t.successPercent >= 90 ? 'degraded' : 'bad';
}

/**
 * Makes the cytoscape graph match `defs` in place: data updated, missing
 * elements removed, new ones added next to their parent. Returns the ids of
 * the nodes added, so only a change of shape needs a layout.
 */
export function syncElements(cy: cytoscape.Core, defs: cytoscape.ElementDefinition[]): string[] {
  const want = new Map<string, cytoscape.ElementDefinition>();
  for (const d of defs) if (d.data.id !== undefined) want.set(d.data.id, d);
  const added: string[] = [];
  cy.batch(() => {
    // Edges first: removing a node also removes its edges and children.
    cy.edges()
      .filter((e) => !want.has(e.id()))
      .remove();
    cy.nodes()
      .filter((n) => !want.has(n.id()))
      .remove();
    for (const d of defs) {
      const id = d.data.id;
      if (id === undefined) continue;
      const el = cy.getElementById(id);
      if (el.nonempty()) {
        if (el.isNode() && (el.data('parent') ?? null) !== (d.data.parent ?? null))
          el.move({ parent: d.data.parent ?? null });
        el.data(d.data);
        continue;
      }
      if (d.group === 'nodes') {
        const parent = d.data.parent !== undefined ? cy.getElementById(d.data.parent) : undefined;
        const at = parent?.nonempty()
          ? parent.position()
          : { x: cy.width() / 2 + Math.random() * 40, y: cy.height() / 2 + Math.random() * 40 };
        cy.add({ ...d, position: { x: at.x + Math.random() * 20 - 10, y: at.y + Math.random() * 20 - 10 } });
        added.push(id);
      } else {
        cy.add(d);
      }
    }
  });
  return added;
}
