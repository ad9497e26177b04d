import { randomBytes } from 'node:crypto';
import { ALWAYS_LEADER, type Leadership } from '../../leader/leadership.js';
import type { Logger } from '../../logger/logger.js';
import { OBJECT_KINDS, type ObjectKind } from '../../model/objects.js';
import type { Problem, ProblemReporter } from '../registry.js';
import type { MeshStore } from '../store.js';
import { KubeApiError, type KubeClient } from './client.js';

export const EVENT_COMPONENT = 'skein-controller';
export const REASON_INVALID_OBJECT = 'InvalidObject';

/** apiVersion and uid of an object, to name it in an Event. */
export interface ObjectRef {
  apiVersion: string;
  uid?: string;
}

export interface KubeEventReporterOptions {
  /** Ideally with its own rate limiter, so Events never slow down lists and watches. */
  client: KubeClient;
  logger: Logger;
  /** Event `source.component` (default skein-controller). */
  component?: string;
  /** Fills apiVersion/uid for problems that lack them (policy problems name store objects). */
  lookup?: (kind: string, namespace: string | undefined, name: string) => ObjectRef | undefined;
  /** Namespace for Events about cluster-scoped objects (default `default`, as the API requires). */
  clusterEventsNamespace?: string;
  /** Distinct problems remembered for deduplication (default 5000; oldest forgotten first). */
  maxTracked?: number;
  /** Only the leader writes Events (every replica sees the same problems); default: always. */
  leadership?: Leadership;
}

interface Tracked {
  source: string;
  namespace: string;
  eventName: string | undefined;
  count: number;
  /** Serialises the writes of one Event: the POST must land before a PATCH. */
  chain: Promise<void>;
}

// Event messages are meant to be short; the events.k8s.io API caps them at 1 kB.
const MAX_MESSAGE = 1024;

function isObjectKind(k: string): k is ObjectKind {
  return OBJECT_KINDS.some((x) => x === k);
}

/** A lookup that finds apiVersion/uid of objects in a MeshStore. */
export function storeLookup(store: MeshStore): KubeEventReporterOptions['lookup'] {
  return (kind, namespace, name) => {
    if (!isObjectKind(kind)) return undefined;
    const o = store.get(kind, namespace ? `${namespace}/${name}` : name);
    if (!o) return undefined;
    return { apiVersion: o.apiVersion, ...(o.metadata.uid ? { uid: o.metadata.uid } : {}) };
  };
}

/**
 * Records each problem as a core/v1 Event (type Warning) on the object it
 * concerns, so `kubectl describe` shows why skein ignores it. A repeat of the
 * same problem on the same object bumps the Event's count and lastTimestamp
 * instead of posting another one (what client-go's event correlator does).
 * Problems without a kind and name (an unreadable file) have no object to
 * attach to and are ignored here. Failures are logged, never thrown.
 */
export class KubeEventReporter implements ProblemReporter {
  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly component: string;
  private readonly lookup: KubeEventReporterOptions['lookup'];
  private readonly clusterNs: string;
  private readonly maxTracked: number;
  private readonly tracked = new Map<string, Tracked>();
  private readonly pending = new Set<Promise<void>>();
  private readonly leadership: Leadership;

  constructor(options: KubeEventReporterOptions) {
    this.leadership = options.leadership ?? ALWAYS_LEADER;
    this.client = options.client;
    this.log = options.logger.child({ component: 'kube-events' });
    this.component = options.component ?? EVENT_COMPONENT;
    this.lookup = options.lookup;
    this.clusterNs = options.clusterEventsNamespace ?? 'default';
    this.maxTracked = options.maxTracked ?? 5000;
  }

  report(p: Problem): void {
    if (!p.kind || !p.name) return;
    // A follower's Event would duplicate the leader's (same store, same problem).
    if (!this.leadership.isLeader) return;
    const ref = p.uid && p.apiVersion ? undefined : this.lookup?.(p.kind, p.namespace, p.name);
    const apiVersion = p.apiVersion ?? ref?.apiVersion;
    const uid = p.uid ?? ref?.uid;
    const reason = p.code ?? REASON_INVALID_OBJECT;
    const key = JSON.stringify([p.kind, p.namespace ?? '', p.name, uid ?? '', reason, p.reason]);
    let t = this.tracked.get(key);
    if (t) {
      // Refresh its place: the oldest untouched problems are forgotten first.
      this.tracked.delete(key);
    } else {
      t = {
        source: p.source,
        namespace: p.namespace ?? this.clusterNs,
        eventName: undefined,
        count: 0,
        chain: Promise.resolve(),
      };
    }
    this.tracked.set(key, t);
    while (this.tracked.size > this.maxTracked) {
      const oldest = this.tracked.keys().next().value;
      if (oldest === undefined) break;
      this.tracked.delete(oldest);
    }
    t.count++;
    const entry = t;
    const involvedObject = {
      kind: p.kind,
      name: p.name,
      ...(p.namespace ? { namespace: p.namespace } : {}),
      ...(apiVersion ? { apiVersion } : {}),
      ...(uid ? { uid } : {}),
    };
    const message = p.reason.length > MAX_MESSAGE ? `${p.reason.slice(0, MAX_MESSAGE - 3)}...` : p.reason;
    const write = entry.chain.then(() => this.write(entry, { involvedObject, reason, message }));
    entry.chain = write;
    this.pending.add(write);
    void write.finally(() => this.pending.delete(write));
  }

  /** Forgets the problems of a source: a later problem gets a fresh Event. */
  resolved(source: string): void {
    for (const [key, t] of this.tracked) if (t.source === source) this.tracked.delete(key);
  }

  /** Resolves when every Event write issued so far has finished (for tests and shutdown). */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private async write(
    t: Tracked,
    e: { involvedObject: Record<string, string>; reason: string; message: string },
  ): Promise<void> {
    const now = new Date().toISOString();
    try {
      if (t.eventName !== undefined) {
        try {
          await this.client.request(
            'PATCH',
            `/api/v1/namespaces/${encodeURIComponent(t.namespace)}/events/${encodeURIComponent(t.eventName)}`,
            {
              body: { count: t.count, lastTimestamp: now, message: e.message },
              contentType: 'application/merge-patch+json',
            },
          );
          return;
        } catch (err) {
          // Events expire (one hour by default): post a new one.
          if (!(err instanceof KubeApiError && err.status === 404)) throw err;
          t.count = 1;
        }
      }
      const name = `${(e.involvedObject['name'] ?? 'object').slice(0, 200)}.${Date.now().toString(16)}${randomBytes(4).toString('hex')}`;
      await this.client.request('POST', `/api/v1/namespaces/${encodeURIComponent(t.namespace)}/events`, {
        body: {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name, namespace: t.namespace },
          involvedObject: e.involvedObject,
          reason: e.reason,
          message: e.message,
          type: 'Warning',
          // Legacy (core/v1) fields only: setting reportingComponent would
          // switch the API server to events.k8s.io validation (action, eventTime…).
          source: { component: this.component },
          firstTimestamp: now,
          lastTimestamp: now,
          count: t.count,
        },
      });
      t.eventName = name;
    } catch (err) {
      this.log.warn(
        {
          err: err instanceof Error ? err.message : String(err),
          object: e.involvedObject,
          reason: e.reason,
        },
        'could not record Event',
      );
    }
  }
}
