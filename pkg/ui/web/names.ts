// What the side panel calls graph nodes, and its hint line.
import type { MeshGraph } from '../graph-types.js';
import { h } from './dom.js';

export function hint(text: string): HTMLElement {
  return h('p', { class: 'hint' }, text);
}

/** A node's name in words: a service's key, `identity <key>`, or an outside node's label. */
export function nameOf(g: MeshGraph, nodeId: string): string {
  const s = g.services.find((x) => x.id === nodeId);
  if (s) return s.key;
  const i = g.identities.find((x) => x.id === nodeId);
  if (i) return `identity ${i.key}`;
  const x = g.external.find((n) => n.id === nodeId) ?? g.ingressSources.find((n) => n.id === nodeId);
  return x ? x.label : nodeId;
}
