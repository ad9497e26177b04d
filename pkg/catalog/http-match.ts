// Whether one HTTP request satisfies an SMI HTTPRouteGroup match, as the Envoy
// messages built from it decide (rbac/rbac.ts httpMatchPermission, the egress
// routes of egress/egress.ts): for `skein policy check`, which has a request
// and the policy but no Envoy to ask.
import type { HTTPMatch } from '../model/objects.js';

export interface HttpRequest {
  /** The request path; a query string is ignored (Envoy's url_path and route path matches ignore it). */
  path: string;
  method: string;
  /** Header names lower-cased. */
  headers: Readonly<Record<string, string>>;
}

/** A whole-string test of an RE2 pattern in JavaScript; an unparsable one matches nothing. */
function fullMatch(pattern: string, text: string): boolean {
  try {
    return new RegExp(`^(?:${pattern})$`).test(text);
  } catch {
    return false;
  }
}

/** The path without its query string or fragment. */
export function pathOnly(path: string): string {
  const cut = path.search(/[?#]/);
  return cut < 0 ? path : path.slice(0, cut);
}

/**
 * SMI: pathRegex is anchored at the start only (an empty one or `.*` is any
 * path); methods match exactly, `*` any; every header regex must match the
 * whole value. The conditions are ANDed.
 */
export function httpMatchAdmits(m: HTTPMatch, req: HttpRequest): boolean {
  const path = pathOnly(req.path);
  if (m.pathRegex !== undefined && m.pathRegex !== '' && m.pathRegex !== '.*') {
    const body = m.pathRegex.startsWith('^') ? m.pathRegex.slice(1) : m.pathRegex;
    if (!fullMatch(`(?:${body}).*`, path)) return false;
  }
  const methods = m.methods ?? [];
  if (methods.length > 0 && !methods.includes('*')) {
    if (!methods.some((x) => x.toUpperCase() === req.method.toUpperCase())) return false;
  }
  for (const [name, regex] of Object.entries(m.headers ?? {})) {
    const value = req.headers[name.toLowerCase()];
    if (value === undefined || !fullMatch(regex, value)) return false;
  }
  return true;
}
