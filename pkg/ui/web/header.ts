import type { MeshGraph } from '../graph-types.js';

function byId(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`#${id} missing from index.html`);
  return el;
}

export function renderHeader(g: MeshGraph): void {
  byId('mesh-name').textContent = g.mesh;
  const mode = byId('mode');
  mode.textContent = g.permissive ? 'permissive mode' : 'SMI mode (deny by default)';
  mode.classList.toggle('permissive', g.permissive);
  byId('permissive-note').hidden = !g.permissive;
  const c = g.counts;
  const states = [
    `${c.byState.SYNCED} synced`,
    `${c.byState.STALE} stale`,
    `${c.byState.NACKED} nacked`,
    `${c.byState.DISCONNECTED} disconnected`,
  ].join(', ');
  byId('counts').textContent =
    `${c.namespaces} namespaces · ${c.services} services · ${c.proxies} proxies (${states})` +
    (g.permissive ? '' : ` · ${c.edges} allowed paths`) +
    (c.egress > 0 ? ` · ${c.egress} egress` : '') +
    (c.ingress > 0 ? ` · ${c.ingress} ingress` : '');
}

/** The live indicator: on while the event stream is open. */
export function renderLive(state: 'on' | 'off' | 'connecting', at?: Date): void {
  const live = byId('live');
  live.className = `live ${state}`;
  byId('live-text').textContent =
    state === 'on'
      ? `live${at ? ` · updated ${at.toLocaleTimeString()}` : ''}`
      : state === 'off'
        ? 'reconnecting…'
        : 'connecting';
}
