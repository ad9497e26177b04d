// What skein made of each object it interprets, written where `kubectl get`
// and `kubectl describe` show it: an `Accepted` condition in status.conditions
// of every object of the CRDs skein ships (STATUS_KINDS: SMI, IngressBackend,
// Egress, Retry, UpstreamTrafficSetting, MeshConfig; their status subresource), with
// observedGeneration, as Kubernetes API conventions describe conditions
// (https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#typical-status-properties).
//
// The writer owns only its own condition: it server-side-applies it under
// its field manager, so conditions other controllers write survive (the CRDs
// declare conditions a list-map keyed by type).
import { ALWAYS_LEADER, type Leadership } from '../../leader/leadership.js';
import type { Logger } from '../../logger/logger.js';
import type { ObjectKind } from '../../model/objects.js';
import type { BookEntry } from '../problem-book.js';
import { KubeApiError, type KubeClient } from './client.js';

/** Kinds whose status skein writes (the CRDs it ships, all with a status subresource). */
export const STATUS_KINDS: readonly ObjectKind[] = Object.freeze([
  'TrafficTarget',
  'HTTPRouteGroup',
  'TCPRoute',
  'TrafficSplit',
  'IngressBackend',
  'Egress',
  'MeshConfig',
  'Retry',
  'UpstreamTrafficSetting',
]);

export const CONDITION_ACCEPTED = 'Accepted';
export const FIELD_MANAGER = 'skein-controller';
// Condition messages are for people; Events cap theirs at 1 kB too.
const MAX_MESSAGE = 1024;

export interface AcceptedCondition {
  type: typeof CONDITION_ACCEPTED;
  status: 'True' | 'False';
  reason: string;
  message: string;
  observedGeneration: number;
  lastTransitionTime: string;
}

/** One object whose status skein owns, as the registry's cache has it now. */
export interface StatusObject {
  kind: ObjectKind;
  apiVersion: string;
  /** The collection path segment (`trafficsplits`). */
  plural: string;
  namespace: string;
  name: string;
  generation: number;
  /** Its Accepted condition as stored now, if any. */
  accepted?: Omit<AcceptedCondition, 'type'>;
}

function objectKey(o: { kind?: string; namespace?: string; name?: string }): string {
  return `${o.kind ?? ''}|${o.namespace ?? ''}/${o.name ?? ''}`;
}

function sameObject(e: BookEntry, o: StatusObject): boolean {
  return e.kind === o.kind && e.namespace === o.namespace && e.name === o.name;
}

/**
 * The Accepted condition `o` should carry given the problems in force: False
 * with every problem's reason while any names it (invalid versions first),
 * else True. Undefined when what is stored already says so, so nothing is
 * written and status never churns.
 */
export function desiredAccepted(
  o: StatusObject,
  problems: readonly BookEntry[],
  now: Date,
): AcceptedCondition | undefined {
  const mine = problems.filter((e) => sameObject(e, o));
  const invalid = mine.filter((e) => e.type === 'invalid-object');
  const ordered = [...invalid, ...mine.filter((e) => e.type === 'policy')];
  const status = ordered.length > 0 ? 'False' : 'True';
  const reason = invalid.length > 0 ? 'InvalidObject' : ordered.length > 0 ? 'PolicyProblem' : 'Accepted';
  let message =
    ordered.length > 0 ? ordered.map((e) => e.reason).join('; ') : 'valid and in force in the mesh';
  if (message.length > MAX_MESSAGE) message = `${message.slice(0, MAX_MESSAGE - 1)}…`;
  const cur = o.accepted;
  if (
    cur &&
    cur.status === status &&
    cur.reason === reason &&
    cur.message === message &&
    cur.observedGeneration === o.generation
  )
    return undefined;
  // lastTransitionTime moves only when the status does (API conventions).
  const lastTransitionTime =
    cur && cur.status === status && cur.lastTransitionTime ? cur.lastTransitionTime : now.toISOString();
  return {
    type: CONDITION_ACCEPTED,
    status,
    reason,
    message,
    observedGeneration: o.generation,
    lastTransitionTime,
  };
}

/** Parses a stored Accepted condition out of a raw object's status. */
export function storedAccepted(status: unknown): StatusObject['accepted'] {
  if (typeof status !== 'object' || status === null) return undefined;
  const conditions = (status as { conditions?: unknown }).conditions;
  if (!Array.isArray(conditions)) return undefined;
  for (const c of conditions as unknown[]) {
    if (typeof c !== 'object' || c === null) continue;
    const r = c as Record<string, unknown>;
    if (r['type'] !== CONDITION_ACCEPTED) continue;
    if (r['status'] !== 'True' && r['status'] !== 'False') return undefined;
    return {
      status: r['status'],
      reason: typeof r['reason'] === 'string' ? r['reason'] : '',
      message: typeof r['message'] === 'string' ? r['message'] : '',
      observedGeneration: typeof r['observedGeneration'] === 'number' ? r['observedGeneration'] : -1,
      lastTransitionTime: typeof r['lastTransitionTime'] === 'string' ? r['lastTransitionTime'] : '',
    };
  }
  return undefined;
}

export interface StatusWriterOptions {
  /** Ideally with its own rate limiter, so status writes never slow down lists and watches. */
  client: KubeClient;
  logger: Logger;
  /** The objects whose status skein owns, now. */
  objects: () => Iterable<StatusObject>;
  /** The problems in force now (the controller's problem book). */
  problems: () => readonly BookEntry[];
  /** Coalesces bursts of changes into one pass (default 500 ms). */
  delayMs?: number;
  /** After a failed write, the next pass comes this much later (default 5 s). */
  retryMs?: number;
  now?: () => Date;
  /** Only the leader writes status; a new leader is told to schedule() at once. Default: always. */
  leadership?: Leadership;
}

/**
 * Keeps every owned object's Accepted condition true to the problems in
 * force. `schedule()` after anything that may change them (a store change, a
 * problem reported or resolved); passes are coalesced and never overlap.
 * A pass compares against the registry's cache, so an object whose status
 * already says the right thing costs nothing.
 */
export class StatusWriter {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** Writes done, and writes that failed, since start (for tests and /metrics). */
  writes = 0;
  failures = 0;

  constructor(private readonly o: StatusWriterOptions) {}

  schedule(delayMs = this.o.delayMs ?? 500): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.pass();
    }, delayMs);
    this.timer.unref();
  }

  /** Runs a pass now (after any running one) and waits for it. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.pass();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async pass(): Promise<void> {
    if (this.running) {
      this.again = true;
      await this.running;
      return;
    }
    this.running = this.writeAll().finally(() => {
      this.running = undefined;
    });
    await this.running;
    if (this.again) {
      this.again = false;
      this.schedule(0);
    }
  }

  private async writeAll(): Promise<void> {
    if (!(this.o.leadership ?? ALWAYS_LEADER).isLeader) return;
    // Grouped once per pass: each object then looks at its own problems only.
    const byObject = new Map<string, BookEntry[]>();
    for (const e of this.o.problems()) {
      const k = objectKey(e);
      const list = byObject.get(k);
      if (list) list.push(e);
      else byObject.set(k, [e]);
    }
    const now = (this.o.now ?? (() => new Date()))();
    let failed = false;
    for (const obj of [...this.o.objects()]) {
      if (this.stopped) return;
      const condition = desiredAccepted(obj, byObject.get(objectKey(obj)) ?? [], now);
      if (!condition) continue;
      try {
        await this.write(obj, condition);
        this.writes++;
      } catch (err) {
        // Gone meanwhile: its deletion resolves everything.
        if (err instanceof KubeApiError && err.status === 404) continue;
        failed = true;
        this.failures++;
        this.o.logger.warn(
          { kind: obj.kind, namespace: obj.namespace, name: obj.name, err: String(err) },
          'could not write status.conditions; retrying',
        );
      }
    }
    if (failed) this.schedule(this.o.retryMs ?? 5000);
  }

  private write(obj: StatusObject, condition: AcceptedCondition): Promise<unknown> {
    const [group, version] = obj.apiVersion.split('/');
    const path =
      `/apis/${group}/${version}/namespaces/${encodeURIComponent(obj.namespace)}/` +
      `${obj.plural}/${encodeURIComponent(obj.name)}/status`;
    // Server-side apply of our one condition (JSON is YAML): other conditions stay theirs.
    return this.o.client.request('PATCH', path, {
      query: { fieldManager: FIELD_MANAGER, force: 'true' },
      contentType: 'application/apply-patch+yaml',
      body: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        metadata: { name: obj.name, namespace: obj.namespace },
        status: { conditions: [condition] },
      },
    });
  }
}
