// `--hostile`: one stream sending 10,000 EDS names of 200 characters again and
// again, while the usual endpoint changes are timed for the rest of the fleet.
import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChangeDriver } from './changes.js';
import { endpointChangeIp } from './changes.js';
import type { Fleet } from './fleet.js';
import { nowMs } from './protocol.js';
import { type Summary, summarize } from './stats.js';

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'hostile-worker.js');

export type HostileParentMessage =
  | {
      type: 'init';
      address: string;
      caDir: string;
      cn: string;
      spiffe: string;
      delta: boolean;
      names: number;
      nameLength: number;
      /** Pause after each request has been written, in ms. */
      intervalMs: number;
    }
  | { type: 'stop' };

export interface HostileReport {
  type: 'report';
  /** Streams opened (the client reconnects whenever the server ends one). */
  streams: number;
  requests: number;
  responses: number;
  /** How its streams ended: "CODE: details" → count. */
  statuses: Record<string, number>;
}

export function isHostileParentMessage(m: unknown): m is HostileParentMessage {
  return typeof m === 'object' && m !== null && 'type' in m && (m.type === 'init' || m.type === 'stop');
}

function isReport(m: unknown): m is HostileReport {
  return typeof m === 'object' && m !== null && 'type' in m && m.type === 'report';
}

export interface HostileResult {
  names: number;
  nameLength: number;
  /** write → last ACK of endpoint changes, without and with the hostile stream. */
  quietMs: Summary;
  underAttackMs: Summary;
  /** Changes that reached no proxy within the wait. */
  quietNoPush: number;
  underAttackNoPush: number;
  hostile: Omit<HostileReport, 'type'>;
}

export interface HostileOptions {
  address: string;
  caDir: string;
  cn: string;
  spiffe: string;
  delta: boolean;
  /** Endpoint changes timed per condition. */
  changes: number;
  quietMs: number;
  /** First change index to use (after those the change phase used). */
  firstK: number;
}

const NAMES = 10_000;
const NAME_LENGTH = 200;

/**
 * Write → last ACK of the burst one endpoint change causes. Settled by ACK
 * silence alone: the hostile stream keeps the controller's CPU busy, so the
 * change phase's "CPU quiet" test would never hold.
 */
async function timeChange(
  fleet: Fleet,
  driver: ChangeDriver,
  kind: 'endpoint-add' | 'endpoint-remove',
  k: number,
  quietMs: number,
): Promise<number> {
  fleet.setMarker(endpointChangeIp(k));
  const t0 = nowMs();
  const rec = fleet.record(t0);
  await driver.apply(kind, k);
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    const now = nowMs();
    const last = rec.acks.length > 0 ? Math.max(...rec.acks.map((a) => a.at)) : undefined;
    if (last !== undefined && now - last >= quietMs + fleet.flushMs) break;
    if (now - t0 >= 10_000) break;
  }
  fleet.endRecording(rec);
  return rec.acks.length > 0 ? Math.max(...rec.acks.map((a) => a.at)) - t0 : Number.NaN;
}

async function timeChanges(
  fleet: Fleet,
  driver: ChangeDriver,
  o: HostileOptions,
  from: number,
): Promise<{ ms: number[]; noPush: number }> {
  const ms: number[] = [];
  let noPush = 0;
  for (let i = 0; i < o.changes; i++) {
    // Add then remove the same pod: two timed pushes per index, the fleet left as it was.
    for (const kind of ['endpoint-add', 'endpoint-remove'] as const) {
      const t = await timeChange(fleet, driver, kind, from + i, o.quietMs);
      if (Number.isNaN(t)) noPush++;
      else ms.push(t);
    }
  }
  return { ms, noPush };
}

export async function measureHostile(
  fleet: Fleet,
  driver: ChangeDriver,
  o: HostileOptions,
): Promise<HostileResult> {
  const quiet = await timeChanges(fleet, driver, o, o.firstK);
  const child: ChildProcess = fork(SCRIPT, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const started = new Promise<void>((resolve, reject) => {
    child.on('message', (m: unknown) => {
      if (typeof m === 'object' && m !== null && 'type' in m && m.type === 'started') resolve();
    });
    child.once('exit', (code) => reject(new Error(`hostile client exited (${code})`)));
  });
  const init: HostileParentMessage = {
    type: 'init',
    address: o.address,
    caDir: o.caDir,
    cn: o.cn,
    spiffe: o.spiffe,
    delta: o.delta,
    names: NAMES,
    nameLength: NAME_LENGTH,
    intervalMs: 5,
  };
  child.send(init);
  await started;
  // Let it get going: the first requests and the server's answer to them.
  await new Promise((r) => setTimeout(r, 1000));
  const attacked = await timeChanges(fleet, driver, o, o.firstK + o.changes);
  const report = new Promise<HostileReport>((resolve) => {
    child.on('message', (m: unknown) => {
      if (isReport(m)) resolve(m);
    });
  });
  child.send({ type: 'stop' } satisfies HostileParentMessage);
  const { type: _type, ...hostile } = await report;
  child.kill();
  await exited;
  return {
    names: NAMES,
    nameLength: NAME_LENGTH,
    quietMs: summarize(quiet.ms),
    underAttackMs: summarize(attacked.ms),
    quietNoPush: quiet.noPush,
    underAttackNoPush: attacked.noPush,
    hostile,
  };
}
