// Root rotation evidence across controller replicas. Every replica serves its
// own proxies and issues their leaves itself (design.md, "Several replicas"),
// so only it can tell whether they hold a stage. Each replica publishes what
// it observed as a report (replica-reports.ts stores it in a Lease); the
// leader advances a stage only when its own evidence and every live replica's
// report say the stage is held. Pure: no I/O here.
import type { CARecord, StageEvidence } from './rotation.js';

/** One replica's view of the stage it follows. */
export interface ReplicaReport {
  /** The replica's name (its Lease is `skein-replica-<name>`). */
  replica: string;
  /** stageKey() of the record the replica follows. */
  stage: string;
  /** Its connected proxies not holding the stage, its own leaves, its Secrets and files. */
  proxies: number;
  leaves: number;
  files: number;
  /** Connected proxies the report covers. */
  connected: number;
  /** Whether the stage is complete by this replica's own rule (readyToAdvance, its own clock). */
  ready: boolean;
  /** What it still waits for ('' when ready). */
  waitingFor: string;
  /** Epoch ms the replica computed it (display only: liveness never compares clocks). */
  observedAt: number;
}

/**
 * Names a stage of one rotation: `idle`, or `<stage>@<startedAt>/<stageSince>`.
 * A report of the same stage name from an earlier rotation, or one computed
 * before the replica followed the record, does not match.
 */
export function stageKey(rec: CARecord): string {
  const r = rec.rotation;
  return r === undefined ? 'idle' : `${r.stage}@${r.startedAt}/${r.stageSince}`;
}

/** A replica's own evidence as a report. */
export function reportOf(
  replica: string,
  stage: string,
  e: StageEvidence,
  verdict: { ready: boolean; reason: string },
  observedAt: number,
): ReplicaReport {
  return {
    replica,
    stage,
    proxies: e.proxies,
    leaves: e.leaves,
    files: e.files,
    connected: e.connected ?? 0,
    ready: verdict.ready,
    waitingFor: verdict.ready ? '' : verdict.reason,
    observedAt,
  };
}

/** Whether two reports say the same (a replica rewrites its report only when this changes, or to renew it). */
export function sameReport(a: ReplicaReport | undefined, b: ReplicaReport): boolean {
  return (
    a !== undefined &&
    a.stage === b.stage &&
    a.proxies === b.proxies &&
    a.leaves === b.leaves &&
    a.files === b.files &&
    a.connected === b.connected &&
    a.ready === b.ready
  );
}

const COUNTS = ['proxies', 'leaves', 'files', 'connected'] as const;

/** Parses a stored report; throws naming what is wrong. */
export function decodeReport(text: string, where: string): ReplicaReport {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error(`${where}: the evidence is not JSON`);
  }
  if (typeof v !== 'object' || v === null) throw new Error(`${where}: the evidence is not an object`);
  const o = v as Record<string, unknown>;
  if (typeof o['replica'] !== 'string' || typeof o['stage'] !== 'string')
    throw new Error(`${where}: the evidence has no replica or stage`);
  for (const k of COUNTS)
    if (!Number.isSafeInteger(o[k]) || (o[k] as number) < 0)
      throw new Error(`${where}: the evidence's ${k} is not a count`);
  if (typeof o['ready'] !== 'boolean') throw new Error(`${where}: the evidence's ready is not a boolean`);
  return {
    replica: o['replica'],
    stage: o['stage'],
    proxies: o['proxies'] as number,
    leaves: o['leaves'] as number,
    files: o['files'] as number,
    connected: o['connected'] as number,
    ready: o['ready'],
    waitingFor: typeof o['waitingFor'] === 'string' ? o['waitingFor'] : '',
    observedAt: Number(o['observedAt']) || 0,
  };
}

/** A replica's report as /debug/certs and `skein ca status` show it. */
export interface ReplicaStatus extends Omit<ReplicaReport, 'observedAt'> {
  observedAt: string;
  /** This replica's own evidence (not read back from its report). */
  self?: true;
  /** The report is for the stage the record is in now. */
  current: boolean;
}

export function replicaStatus(r: ReplicaReport, current: string, self: boolean): ReplicaStatus {
  const { observedAt, ...rest } = r;
  return {
    ...rest,
    observedAt: new Date(observedAt).toISOString(),
    current: r.stage === current,
    ...(self ? { self: true as const } : {}),
  };
}

/**
 * The leader's verdict over every live replica: its own (`ownVerdict`, from
 * readyToAdvance) and each other's report, which must be for the current
 * stage and ready. Counts are summed over every replica; a replica whose
 * report is for another stage counts its connected proxies as behind (it
 * has not shown they hold this one).
 */
export function combineEvidence(
  own: StageEvidence,
  ownVerdict: { ready: boolean; reason: string },
  others: readonly ReplicaReport[],
  current: string,
): { evidence: StageEvidence; ready: boolean; reason: string } {
  const evidence: StageEvidence = { ...own, connected: own.connected ?? 0 };
  const waiting: string[] = ownVerdict.ready ? [] : [`this replica: ${ownVerdict.reason}`];
  for (const r of [...others].sort((a, b) => a.replica.localeCompare(b.replica))) {
    evidence.connected = (evidence.connected ?? 0) + r.connected;
    if (r.stage !== current) {
      evidence.proxies += r.connected;
      waiting.push(`replica ${r.replica} has not reported this stage yet (it reports ${r.stage})`);
      continue;
    }
    evidence.proxies += r.proxies;
    evidence.leaves += r.leaves;
    evidence.files += r.files;
    if (!r.ready) waiting.push(`replica ${r.replica}: ${r.waitingFor || 'not ready'}`);
  }
  if (waiting.length === 0) return { evidence, ready: true, reason: ownVerdict.reason };
  return { evidence, ready: false, reason: waiting.join('; ') };
}

/**
 * Which reports are live, judged the way leader election judges its Lease
 * (client-go tools/leaderelection): a report is gone once its renew time has
 * not changed for its lease duration *as observed locally*, never by
 * comparing its timestamp with our clock, so clock skew between replicas does
 * not matter. A report first seen counts as just renewed.
 */
export class ReportLiveness {
  readonly #seen = new Map<string, { renewTime: string; at: number }>();
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** The reports listed now (name, renew time, lease duration ms): which are live, which are gone. */
  observe(listed: readonly { name: string; renewTime: string; durationMs: number }[]): {
    live: Set<string>;
    gone: Set<string>;
  } {
    const now = this.#now();
    const live = new Set<string>();
    const gone = new Set<string>();
    const present = new Set<string>();
    for (const l of listed) {
      present.add(l.name);
      const prior = this.#seen.get(l.name);
      if (prior === undefined || prior.renewTime !== l.renewTime)
        this.#seen.set(l.name, { renewTime: l.renewTime, at: now });
      const at = this.#seen.get(l.name)?.at ?? now;
      (now - at < l.durationMs ? live : gone).add(l.name);
    }
    for (const name of this.#seen.keys()) if (!present.has(name)) this.#seen.delete(name);
    return { live, gone };
  }
}
