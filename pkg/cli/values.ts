// `--set a.b=c` for `skein install`, as Helm reads it for the common cases:
// dotted keys make nested maps; true/false and integers are typed; anything
// else is a string. (Lists and escaped dots: use a values file, -f.)
import { UsageError } from './errors.js';

export type Values = { [key: string]: unknown };

function typed(raw: string): unknown {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  if (raw === 'null') return null;
  if (/^-?(0|[1-9][0-9]{0,14})$/.test(raw)) return Number(raw);
  return raw;
}

function isValues(v: unknown): v is Values {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Applies `key=value` pairs (each may hold several, comma-separated) onto `into`. */
export function applySets(into: Values, sets: readonly string[]): Values {
  for (const set of sets) {
    for (const pair of set.split(',')) {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new UsageError(`--set ${JSON.stringify(pair)}: expected key=value`);
      const keys = pair.slice(0, eq).split('.');
      if (keys.some((k) => k === ''))
        throw new UsageError(`--set ${JSON.stringify(pair)}: empty key segment`);
      let node = into;
      for (const k of keys.slice(0, -1)) {
        const next = node[k];
        if (isValues(next)) node = next;
        else {
          const fresh: Values = {};
          node[k] = fresh;
          node = fresh;
        }
      }
      node[keys[keys.length - 1] ?? ''] = typed(pair.slice(eq + 1));
    }
  }
  return into;
}
