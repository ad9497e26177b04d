import type { ErrorObject } from 'ajv';

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `/spec/backends/0/weight` → `spec.backends[0].weight`; odd keys in brackets. */
export function fieldPath(instancePath: string, extra?: string): string {
  const segments = instancePath === '' ? [] : instancePath.slice(1).split('/');
  if (extra !== undefined) segments.push(extra);
  let out = '';
  for (const raw of segments) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^[0-9]+$/.test(seg)) out += `[${seg}]`;
    else if (IDENT.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out === '' ? '(root)' : out;
}

function param(params: Record<string, unknown>, name: string): unknown {
  return params[name];
}

/** One readable line per ajv error: `<field path>: <what is wrong>`. */
export function describeError(e: ErrorObject): string {
  const p = e.params;
  switch (e.keyword) {
    case 'required':
      return `${fieldPath(e.instancePath, String(param(p, 'missingProperty')))}: required field is missing`;
    case 'additionalProperties':
      return `${fieldPath(e.instancePath, String(param(p, 'additionalProperty')))}: unknown field`;
    case 'enum': {
      const allowed = param(p, 'allowedValues');
      const list = Array.isArray(allowed) ? allowed.map((v) => JSON.stringify(v)).join(', ') : '';
      return `${fieldPath(e.instancePath)}: must be one of ${list}`;
    }
    case 'type': {
      const t = param(p, 'type');
      return `${fieldPath(e.instancePath)}: must be ${Array.isArray(t) ? t.join(' or ') : String(t)}`;
    }
    case 'pattern':
      return `${fieldPath(e.instancePath)}: must match ${String(param(p, 'pattern'))}`;
    default:
      return `${fieldPath(e.instancePath)}: ${e.message ?? e.keyword}`;
  }
}

/** Joins the distinct messages of a failed validation; at most `limit` of them. */
export function describeErrors(errors: readonly ErrorObject[], limit = 5): string {
  const lines = [...new Set(errors.map(describeError))];
  const shown = lines.slice(0, limit);
  if (lines.length > limit) shown.push(`(${lines.length - limit} more)`);
  return shown.join('; ');
}
