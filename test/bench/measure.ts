// The benchmark's measured phases. Times are epoch ms taken in the parent
// (writes, kills) and in the workers (ACKs); both read the same host clock.
import { CHANGE_KINDS, type ChangeDriver, type ChangeKind, endpointChangeIp } from './changes.js';
import type { ControllerProcess } from './controller.js';
import type { Fleet } from './fleet.js';
import { nowMs, TYPE_CODES, type TypeCode } from './protocol.js';
import { round, type Summary, summarize } from './stats.js';

const MB = 1024 * 1024;

/** What a measured phase reads of a controller: its CPU seconds so far (skein's or a peer's). */
export interface MeasuredController {
  cpu(): number;
}

/** What applies the k-th change of a kind: manifest files (local mode) or the API server. */
export interface ChangeApplier {
  apply: ChangeDriver['apply'];
}

export interface InitialResult {
  /** Fleet connect → every proxy complete (all subscribed types ACKed), ms. */
  convergenceMs: number;
  /** Per-proxy time to complete, ms. */
  perProxyMs: Summary;
  controllerCpuS: number;
  workerCpuS: number;
  responses: number;
  bytes: number;
  /** Of which per resource type. */
  bytesByType: Record<TypeCode, number>;
  incomplete: number;
}

export async function measureInitial(
  fleet: Fleet,
  controller: MeasuredController,
  timeoutMs: number,
): Promise<InitialResult> {
  const cpu0 = controller.cpu();
  const wcpu0 = fleet.cpu();
  const acks0 = fleet.acks;
  const bytes0 = fleet.ackBytes;
  const byType0 = { ...fleet.ackBytesByType };
  const t0 = nowMs();
  fleet.connect();
  await fleet.waitComplete(timeoutMs);
  // Wait for the tail (pushes caused by certificates issued on connect, for instance).
  await fleet.waitQuiet(t0, 500, 0);
  const times = fleet.completionTimes();
  const incomplete = fleet.size - times.length;
  return {
    convergenceMs: times.length > 0 ? Math.max(...times) - t0 : Number.NaN,
    perProxyMs: summarize(times.map((t) => t - t0)),
    controllerCpuS: controller.cpu() - cpu0,
    workerCpuS: fleet.cpu() - wcpu0,
    responses: fleet.acks - acks0,
    bytes: fleet.ackBytes - bytes0,
    bytesByType: bytesSince(fleet, byType0),
    incomplete,
  };
}

function bytesSince(fleet: Fleet, before: Record<TypeCode, number>): Record<TypeCode, number> {
  const out = { ...before };
  for (const t of TYPE_CODES) out[t] = fleet.ackBytesByType[t] - before[t];
  return out;
}

export interface IdleResult {
  windowS: number;
  controllerCpuS: number;
  /** Responses any proxy received in the window (expected 0). */
  pushes: number;
  bytes: number;
}

export async function measureIdle(
  fleet: Fleet,
  controller: MeasuredController,
  windowMs: number,
): Promise<IdleResult> {
  const cpu0 = controller.cpu();
  const acks0 = fleet.acks;
  const bytes0 = fleet.ackBytes;
  await new Promise((r) => setTimeout(r, windowMs));
  return {
    windowS: windowMs / 1000,
    controllerCpuS: controller.cpu() - cpu0,
    pushes: fleet.acks - acks0,
    bytes: fleet.ackBytes - bytes0,
  };
}

export interface TickResult {
  /** Controller uptime (since ready) at the tick the window straddles, s. */
  tickAtS: number;
  windowS: number;
  controllerCpuS: number;
  /** Responses any proxy received in the window: a resync must not resend unchanged config (expected 0). */
  pushes: number;
}

// The controller's announcement ticker (pkg/announcements/bus.ts startTicker default).
const TICK_MS = 60_000;

/** An idle window around the next one-minute ticker (2 s before to 3 s after). */
export async function measureTick(fleet: Fleet, controller: ControllerProcess): Promise<TickResult> {
  const up = Date.now() - controller.readyAt;
  const tickAt = controller.readyAt + TICK_MS * Math.ceil((up + 2500) / TICK_MS);
  await new Promise((r) => setTimeout(r, Math.max(0, tickAt - 2000 - Date.now())));
  const cpu0 = controller.cpu();
  const acks0 = fleet.acks;
  await new Promise((r) => setTimeout(r, 5000));
  return {
    tickAtS: (tickAt - controller.readyAt) / 1000,
    windowS: 5,
    controllerCpuS: controller.cpu() - cpu0,
    pushes: fleet.acks - acks0,
  };
}

export interface ChangeSample {
  kind: ChangeKind;
  subject: string;
  /** Manifest write → last ACK of the burst it caused; NaN when nothing was pushed. */
  convergenceMs: number;
  /** Endpoint changes: write → last proxy whose EDS shows the change (by content). */
  contentMs?: number;
  /** Endpoint changes: proxies whose EDS showed the change. */
  reflecting?: number;
  proxies: number;
  responses: number;
  bytes: number;
  controllerCpuS: number;
}

export interface ChangeKindResult {
  convergenceMs: Summary;
  contentMs?: Summary;
  proxies: Summary;
  responses: Summary;
  bytes: Summary;
  controllerCpuS: Summary;
  /** Changes after which no proxy received anything within the wait. */
  noPush: number;
}

/**
 * Waits until a change has played out: the fleet got no ACK for `quietMs`
 * AND the controller used under 10% of a core over the last `quietMs` (it may
 * still be computing a push that has not left yet) AND so did the fleet
 * workers together (they may still be receiving responses: HTTP/2 interleaves
 * many large responses, so none may complete, and nothing is ACKed, for a
 * while after the controller went idle). With no ACK at all it waits at least
 * `noAckMinMs` (covers the registry's 1 s polling fallback).
 */
export async function waitSettled(
  fleet: Fleet,
  controller: MeasuredController,
  since: number,
  quietMs: number,
  noAckMinMs: number,
  maxMs: number,
): Promise<void> {
  const samples: { at: number; cpu: number; fleetCpu: number }[] = [];
  for (;;) {
    const now = nowMs();
    const cpu = controller.cpu();
    const fleetCpu = fleet.cpu();
    samples.push({ at: now, cpu, fleetCpu });
    while (samples.length > 1 && (samples[1]?.at ?? now) <= now - quietMs) samples.shift();
    const oldest = samples[0];
    const budget = oldest === undefined ? 0 : (0.1 * (now - oldest.at)) / 1000;
    const cpuQuiet =
      oldest !== undefined &&
      now - oldest.at >= quietMs - 60 &&
      cpu - oldest.cpu <= budget &&
      fleetCpu - oldest.fleetCpu <= budget;
    const acked = fleet.lastAckAt >= since;
    const fleetQuiet = now - fleet.lastAckAt >= quietMs + fleet.flushMs;
    if (cpuQuiet && fleetQuiet && now - since >= (acked ? quietMs : noAckMinMs)) return;
    if (now - since >= maxMs) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function measureChange(
  fleet: Fleet,
  controller: MeasuredController,
  driver: ChangeApplier,
  kind: ChangeKind,
  k: number,
  quietMs: number,
  /** With no ACK at all, wait at least this long (a controller may batch changes in a window). */
  noAckMinMs = 1500,
): Promise<ChangeSample> {
  const ip = kind === 'endpoint-add' || kind === 'endpoint-remove' ? endpointChangeIp(k) : undefined;
  if (ip) fleet.setMarker(ip);
  const cpu0 = controller.cpu();
  const t0 = nowMs();
  const rec = fleet.record(t0);
  const applied = await driver.apply(kind, k);
  await waitSettled(fleet, controller, t0, quietMs, noAckMinMs, 60_000);
  fleet.endRecording(rec);
  const cpu = controller.cpu() - cpu0;
  const acks = rec.acks;
  const sample: ChangeSample = {
    kind,
    subject: applied.subject,
    convergenceMs: acks.length > 0 ? Math.max(...acks.map((a) => a.at)) - t0 : Number.NaN,
    proxies: new Set(acks.map((a) => a.p)).size,
    responses: acks.length,
    bytes: acks.reduce((n, a) => n + a.b, 0),
    controllerCpuS: cpu,
  };
  if (applied.marker) {
    // First EDS response per proxy that shows the change (IP present after an add, absent after a
    // removal). Absence is only meaningful because the server sends every subscribed CLA in each
    // EDS response; a server sending only changed CLAs would need a cluster-name check here too.
    const want = applied.marker.present ? 1 : 0;
    const first = new Map<number, number>();
    for (const a of acks) if (a.t === 'EDS' && a.m === want && !first.has(a.p)) first.set(a.p, a.at);
    sample.reflecting = first.size;
    sample.contentMs = first.size > 0 ? Math.max(...first.values()) - t0 : Number.NaN;
  }
  return sample;
}

export async function measureChanges(
  fleet: Fleet,
  controller: MeasuredController,
  driver: ChangeApplier,
  repetitions: number,
  quietMs: number,
  noAckMinMs = 1500,
): Promise<{ samples: ChangeSample[]; byKind: Record<string, ChangeKindResult> }> {
  const samples: ChangeSample[] = [];
  for (let k = 0; k < repetitions; k++) {
    for (const kind of CHANGE_KINDS)
      samples.push(await measureChange(fleet, controller, driver, kind, k, quietMs, noAckMinMs));
  }
  const byKind: Record<string, ChangeKindResult> = {};
  for (const kind of CHANGE_KINDS) {
    const of = samples.filter((s) => s.kind === kind);
    const pushed = of.filter((s) => !Number.isNaN(s.convergenceMs));
    const r: ChangeKindResult = {
      convergenceMs: summarize(pushed.map((s) => s.convergenceMs)),
      proxies: summarize(of.map((s) => s.proxies)),
      responses: summarize(of.map((s) => s.responses)),
      bytes: summarize(of.map((s) => s.bytes)),
      controllerCpuS: summarize(of.map((s) => s.controllerCpuS)),
      noPush: of.length - pushed.length,
    };
    const content = of
      .map((s) => s.contentMs)
      .filter((x): x is number => x !== undefined && !Number.isNaN(x));
    if (of.some((s) => s.contentMs !== undefined)) r.contentMs = summarize(content);
    byKind[kind] = r;
  }
  return { samples, byKind };
}

export interface StormResult {
  /** SIGKILL → every proxy complete again on a new stream, ms. */
  fromKillMs: number;
  /** Controller /readyz 200 → every proxy complete again, ms. */
  fromReadyMs: number;
  /** Restart spawn → /readyz 200, ms. */
  restartMs: number;
  perProxyFromKillMs: Summary;
  /** CPU of the restarted controller from its start until the fleet is complete. */
  controllerCpuS: number;
  /** CPU of the fleet workers from the kill until the fleet is complete and quiet (they share the cores). */
  workerCpuS: number;
  rssAfterMB: number;
  /** Bytes the fleet received from the kill until complete and quiet. */
  bytes: number;
  streamEnds: number;
  incomplete: number;
}

/** A controller the reconnect storm can kill and start again. */
export interface CrashableController extends MeasuredController {
  rss(): number;
  /** SIGKILL; resolves once the process is gone. */
  crash(): Promise<void>;
}

export async function measureStorm<C extends CrashableController>(
  fleet: Fleet,
  controller: C,
  timeoutMs: number,
  /** Starts the controller again, resolving once it is ready. */
  restart: () => Promise<C>,
): Promise<{ result: StormResult; controller: C }> {
  const before = fleet.epochs();
  const ends0 = fleet.streamEnds;
  const wcpu0 = fleet.cpu();
  const bytes0 = fleet.ackBytes;
  const tKill = nowMs();
  await controller.crash();
  const tSpawn = nowMs();
  const next = await restart();
  const tReady = nowMs();
  await fleet.waitComplete(timeoutMs, before);
  await fleet.waitQuiet(tReady, 500, 0);
  // Both read after the tail settled, as the controller figure always was.
  const controllerCpuS = next.cpu();
  const workerCpuS = fleet.cpu() - wcpu0;
  const times = fleet.completionTimes(before);
  const last = times.length > 0 ? Math.max(...times) : Number.NaN;
  return {
    controller: next,
    result: {
      fromKillMs: last - tKill,
      fromReadyMs: last - tReady,
      restartMs: tReady - tSpawn,
      perProxyFromKillMs: summarize(times.map((t) => t - tKill)),
      controllerCpuS,
      workerCpuS,
      rssAfterMB: round(next.rss() / MB),
      bytes: fleet.ackBytes - bytes0,
      streamEnds: fleet.streamEnds - ends0,
      incomplete: fleet.size - times.length,
    },
  };
}

export interface FailoverResult {
  replicas: number;
  /** Proxies the killed replica held, which moved to the survivors. */
  moved: number;
  /** SIGKILL of one replica → every proxy it held complete on a survivor, ms. */
  fromKillMs: number;
  perProxyFromKillMs: Summary;
  /** CPU the surviving replicas used from the kill until the fleet was complete and quiet. */
  survivorsCpuS: number;
  workerCpuS: number;
  bytes: number;
  streamEnds: number;
  incomplete: number;
}

/**
 * Kills one of several replicas (not restarted) and times its proxies'
 * move to the survivors; the other proxies' streams are left alone.
 */
export async function measureFailover(
  fleet: Fleet,
  victim: CrashableController,
  survivors: readonly MeasuredController[],
  held: ReadonlySet<number>,
  timeoutMs: number,
): Promise<FailoverResult> {
  // Proxies the victim did not hold count as complete already (-1 < any stream).
  const before = fleet.epochs().map((e, p) => (held.has(p) ? e : -1));
  const ends0 = fleet.streamEnds;
  const wcpu0 = fleet.cpu();
  const bytes0 = fleet.ackBytes;
  const cpu0 = survivors.map((c) => c.cpu());
  const tKill = nowMs();
  await victim.crash();
  await fleet.waitComplete(timeoutMs, before);
  await fleet.waitQuiet(tKill, 500, 0);
  const times = fleet.completionTimes(before.map((e) => (e < 0 ? Number.POSITIVE_INFINITY : e)));
  const last = times.length > 0 ? Math.max(...times) : Number.NaN;
  return {
    replicas: survivors.length + 1,
    moved: held.size,
    fromKillMs: last - tKill,
    perProxyFromKillMs: summarize(times.map((t) => t - tKill)),
    survivorsCpuS: survivors.reduce((sum, c, i) => sum + c.cpu() - (cpu0[i] ?? 0), 0),
    workerCpuS: fleet.cpu() - wcpu0,
    bytes: fleet.ackBytes - bytes0,
    streamEnds: fleet.streamEnds - ends0,
    incomplete: held.size - times.length,
  };
}
