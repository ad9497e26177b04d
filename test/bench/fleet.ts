// The parent side of the proxy fleet: forks the workers, hands each a slice
// of the proxies, and folds their ACK reports into per-proxy state.

import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FleetTransportKind } from './fleet-transport.js';
import { cpuSeconds } from './proc.js';
import {
  type AckEvent,
  type FleetProxySpec,
  isWorkerMessage,
  nowMs,
  type ParentMessage,
  type TypeCode,
  type WorkerMessage,
} from './protocol.js';

const WORKER_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'worker.js');

export interface FleetOptions {
  workers: number;
  proxies: FleetProxySpec[];
  address: string;
  /** Several controller replicas (see ParentMessage init): proxy i's own is replicaOf(i, n). */
  replicas?: string[];
  caDir: string;
  /** TLS server name the ADS serving certificate carries (default localhost). */
  serverName?: string;
  /** Worker → parent batching interval (default 25 ms). */
  flushMs?: number;
  /** Proxies speak Delta ADS instead of SotW. */
  delta?: boolean;
  /** Node id and cluster only instead of a real Envoy's Node (envoy-node.ts). */
  minimalNode?: boolean;
  /** Each proxy's client (default h2, fleet-transport.ts). */
  transport?: FleetTransportKind;
  /** Run each worker under `node --cpu-prof`, profiles here (written when the fleet stops). */
  cpuProfDir?: string;
}

interface ProxyState {
  /** Highest stream number reported. */
  epoch: number;
  /** The stream on which the proxy last became complete, and when (first complete ACK on it). */
  completeEpoch: number;
  completeAt: number;
}

/** ACKs collected while a recording is open. */
export class Recording {
  readonly acks: AckEvent[] = [];
  constructor(readonly since: number) {}
}

interface WorkerHandle {
  child: ChildProcess;
  exited: Promise<void>;
}

export class Fleet {
  private readonly workers: WorkerHandle[] = [];
  private readonly state: ProxyState[];
  private readonly recordings = new Set<Recording>();
  private readonly waiters = new Set<() => void>();
  private readonly pendingMissing: { p: number; missing: string[] }[][] = [];
  private readonly stats: { decoded: number; responses: number }[] = [];
  private failure: Error | undefined;
  readonly flushMs: number;
  /** Time of the latest ACK any worker reported. */
  lastAckAt = 0;
  acks = 0;
  ackBytes = 0;
  /** Bytes ACKed per resource type, over the whole run. */
  readonly ackBytesByType: Record<TypeCode, number> = { CDS: 0, EDS: 0, LDS: 0, RDS: 0, SDS: 0 };
  streamEnds = 0;

  private constructor(opts: FleetOptions) {
    this.flushMs = opts.flushMs ?? 25;
    this.state = opts.proxies.map(() => ({ epoch: 0, completeEpoch: 0, completeAt: 0 }));
  }

  /** Forks the workers; resolves when each has issued its certificates. */
  static async start(opts: FleetOptions): Promise<{ fleet: Fleet; certMs: number }> {
    const fleet = new Fleet(opts);
    const n = Math.max(1, Math.min(opts.workers, opts.proxies.length));
    const ready: Promise<number>[] = [];
    for (let w = 0; w < n; w++) {
      const slice = opts.proxies.filter((_, i) => i % n === w);
      const child = fork(WORKER_SCRIPT, [], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        // A larger young generation: the workers allocate a lot of short-lived
        // buffers and objects per response (10% less worker CPU in a storm).
        execArgv: [
          '--max-semi-space-size=64',
          ...(opts.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', opts.cpuProfDir] : []),
        ],
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      fleet.workers.push({ child, exited });
      ready.push(
        new Promise((resolve, reject) => {
          child.on('message', (msg: unknown) => {
            if (!isWorkerMessage(msg)) return;
            if (msg.type === 'ready') resolve(msg.certMs);
            else if (msg.type === 'error') reject(new Error(`fleet worker ${w}: ${msg.message}`));
            fleet.onMessage(msg);
          });
          child.once('exit', (code) => reject(new Error(`fleet worker ${w} exited (${code})`)));
        }),
      );
      fleet.send(child, {
        type: 'init',
        address: opts.address,
        ...(opts.replicas ? { replicas: opts.replicas } : {}),
        caDir: opts.caDir,
        ...(opts.serverName ? { serverName: opts.serverName } : {}),
        proxies: slice,
        flushMs: fleet.flushMs,
        delta: opts.delta ?? false,
        minimalNode: opts.minimalNode ?? false,
        transport: opts.transport ?? 'h2',
      });
    }
    const certMs = await Promise.all(ready);
    return { fleet, certMs: Math.max(...certMs) };
  }

  get size(): number {
    return this.state.length;
  }

  get pids(): number[] {
    return this.workers.map((w) => w.child.pid).filter((p): p is number => p !== undefined);
  }

  /** CPU seconds all workers used so far. */
  cpu(): number {
    return this.pids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0);
  }

  private send(child: ChildProcess, msg: ParentMessage): void {
    child.send(msg);
  }

  private broadcast(msg: ParentMessage): void {
    for (const w of this.workers) this.send(w.child, msg);
  }

  private onMessage(msg: WorkerMessage): void {
    switch (msg.type) {
      case 'events':
        for (const ev of msg.acks) this.onAck(ev);
        this.streamEnds += msg.ends.length;
        for (const end of msg.ends) {
          const st = this.state[end.p];
          if (st && end.e > st.epoch) st.epoch = end.e;
        }
        break;
      case 'missing':
        this.pendingMissing.push(msg.proxies);
        break;
      case 'stats':
        this.stats.push({ decoded: msg.decoded, responses: msg.responses });
        break;
      case 'error':
        this.failure = new Error(msg.message);
        break;
      case 'ready':
        break;
    }
    for (const w of [...this.waiters]) w();
  }

  private onAck(ev: AckEvent): void {
    this.acks++;
    this.ackBytes += ev.b;
    this.ackBytesByType[ev.t] += ev.b;
    if (ev.at > this.lastAckAt) this.lastAckAt = ev.at;
    const st = this.state[ev.p];
    if (st) {
      if (ev.e > st.epoch) st.epoch = ev.e;
      if (ev.c === 1 && st.completeEpoch !== ev.e) {
        st.completeEpoch = ev.e;
        st.completeAt = ev.at;
      }
    }
    for (const r of this.recordings) if (ev.at >= r.since) r.acks.push(ev);
  }

  connect(): void {
    this.broadcast({ type: 'connect' });
  }

  setMarker(ip: string): void {
    this.broadcast({ type: 'marker', ip });
  }

  record(since = nowMs()): Recording {
    const r = new Recording(since);
    this.recordings.add(r);
    return r;
  }

  endRecording(r: Recording): void {
    this.recordings.delete(r);
  }

  /** Stream numbers per proxy now (the reconnect storm waits for a later stream to complete). */
  epochs(): number[] {
    return this.state.map((s) => s.epoch);
  }

  /** How many proxies are complete on a stream later than `after[p]` (default: any). */
  completeCount(after?: readonly number[]): number {
    return this.state.filter((s, p) => s.completeEpoch > (after?.[p] ?? 0)).length;
  }

  /** Per-proxy completion times of streams later than `after[p]`. */
  completionTimes(after?: readonly number[]): number[] {
    return this.state.filter((s, p) => s.completeEpoch > (after?.[p] ?? 0)).map((s) => s.completeAt);
  }

  private wake(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.waiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, timeoutMs);
      this.waiters.add(done);
    });
  }

  /** Resolves true once every proxy is complete on a stream later than `after[p]`; false on timeout. */
  async waitComplete(timeoutMs: number, after?: readonly number[]): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.completeCount(after) < this.size) {
      if (this.failure) throw this.failure;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await this.wake(Math.min(left, 500));
    }
    return true;
  }

  /**
   * Waits until an ACK later than `since` arrived and then none for `quietMs`
   * (on top of the batching delay). Resolves false when nothing arrived within
   * `firstTimeoutMs`.
   */
  async waitQuiet(since: number, quietMs: number, firstTimeoutMs: number): Promise<boolean> {
    const firstDeadline = since + firstTimeoutMs;
    for (;;) {
      if (this.failure) throw this.failure;
      const now = nowMs();
      if (this.lastAckAt >= since) {
        const idle = now - this.lastAckAt;
        if (idle >= quietMs + this.flushMs) return true;
        await this.wake(quietMs + this.flushMs - idle);
      } else {
        if (now >= firstDeadline) return false;
        await this.wake(Math.min(firstDeadline - now, 100));
      }
    }
  }

  /** What incomplete proxies miss (for a failed convergence). */
  async diagnose(): Promise<{ p: number; missing: string[] }[]> {
    this.pendingMissing.length = 0;
    this.broadcast({ type: 'diagnose' });
    const deadline = Date.now() + 5000;
    while (this.pendingMissing.length < this.workers.length && Date.now() < deadline) await this.wake(200);
    return this.pendingMissing.flat();
  }

  /** Stops every client and worker; returns the workers' counters. */
  async stop(): Promise<{ decoded: number; responses: number }> {
    this.broadcast({ type: 'stop' });
    const timeout = setTimeout(() => {
      for (const w of this.workers) w.child.kill('SIGKILL');
    }, 5000);
    await Promise.all(this.workers.map((w) => w.exited));
    clearTimeout(timeout);
    return this.stats.reduce(
      (a, b) => ({ decoded: a.decoded + b.decoded, responses: a.responses + b.responses }),
      {
        decoded: 0,
        responses: 0,
      },
    );
  }
}
