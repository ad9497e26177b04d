// Policy pieces in words, for the graph's labels and the side panel.
import type { IngressRoute } from '../catalog/ingress.js';
import type { HTTPMatch } from '../model/objects.js';

/** One line per allowed HTTP match (`GET,POST /buy [x-tier=gold]`), or `all requests`. */
export function routeSummary(rule: { http: readonly HTTPMatch[] | 'all' }): string[] {
  if (rule.http === 'all') return ['all requests'];
  return rule.http.map((m) => {
    const methods = m.methods && m.methods.length > 0 ? m.methods.join(',') : '*';
    const headers = Object.entries(m.headers ?? {}).map(([k, v]) => `${k}=${v}`);
    return `${methods} ${m.pathRegex ?? '.*'}${headers.length > 0 ? ` [${headers.join(' ')}]` : ''}`;
  });
}

/** An Ingress host/path: `shop.example.com /books (prefix)`, `any host /health (exact)`, `shop.example.com`. */
export function ingressRouteSummary(r: IngressRoute): string {
  const host = r.host ?? 'any host';
  if (r.path === undefined) return host;
  return `${host} ${r.path.value} (${r.path.type === 'Exact' ? 'exact' : 'prefix'})`;
}

/** `Egress ns/name` → `ns/name` (the kind is said by where it is shown). */
export function objectName(origin: string): string {
  const space = origin.indexOf(' ');
  return space < 0 ? origin : origin.slice(space + 1);
}
