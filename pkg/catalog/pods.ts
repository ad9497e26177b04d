import { LABEL_PROXY_UUID } from '../mesh/constants.js';
import type { Pod } from '../model/objects.js';

/** True when every selector pair is present in the labels. An empty selector matches nothing (a Service without selector selects no pods). */
export function selectorMatches(
  selector: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const pairs = Object.entries(selector);
  if (pairs.length === 0) return false;
  if (!labels) return false;
  return pairs.every(([k, v]) => labels[k] === v);
}

// Terminated pods keep their labels but serve nothing (Kubernetes drops them
// from endpoints too), so they neither back services nor lend identities.
function isTerminated(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * Pods indexed by namespace, by `label=value` and by proxy UUID, so selecting
 * the pods of a Service costs the size of its smallest label bucket rather
 * than a scan of every pod.
 */
export class PodIndex {
  private readonly byLabel = new Map<string, Pod[]>();
  private readonly byUuid = new Map<string, Pod>();

  constructor(pods: Iterable<Pod>) {
    const sorted = [...pods].sort((a, b) => compareStrings(a.metadata.name, b.metadata.name));
    for (const pod of sorted) {
      const ns = pod.metadata.namespace ?? '';
      const uuid = pod.metadata.labels?.[LABEL_PROXY_UUID];
      // Sorted by name, so a (bogus) duplicate UUID resolves to the same pod every time.
      if (uuid !== undefined && !this.byUuid.has(uuid.toLowerCase()))
        this.byUuid.set(uuid.toLowerCase(), pod);
      if (isTerminated(pod)) continue;
      for (const [k, v] of Object.entries(pod.metadata.labels ?? {}))
        push(this.byLabel, labelKey(ns, k, v), pod);
    }
  }

  /** Running pods of a namespace that the selector matches, sorted by name. */
  select(namespace: string, selector: Readonly<Record<string, string>>): Pod[] {
    let smallest: Pod[] | undefined;
    for (const [k, v] of Object.entries(selector)) {
      const bucket = this.byLabel.get(labelKey(namespace, k, v)) ?? [];
      if (smallest === undefined || bucket.length < smallest.length) smallest = bucket;
    }
    if (smallest === undefined) return [];
    return smallest.filter((p) => selectorMatches(selector, p.metadata.labels));
  }

  proxyPod(uuid: string): Pod | undefined {
    return this.byUuid.get(uuid.toLowerCase());
  }
}

function labelKey(ns: string, k: string, v: string): string {
  // NUL cannot occur in label keys or values, so the key is unambiguous.
  return `${ns}\0${k}\0${v}`;
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
