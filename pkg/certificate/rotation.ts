// Root CA rotation as a stage machine over the persisted CA record, the way
// Istio ("plug-in CA" root transition) and Linkerd ("rotating the trust
// anchor") do it: trust first, then issuance, then retirement.
//
//   idle        bundle [old]        issuer old
//   distribute  bundle [old, new]   issuer old   every proxy learns to trust new
//   reissue     bundle [old, new]   issuer new   every leaf is replaced by one from new
//   retire      bundle [new]        issuer new   old is dropped from every trust store
//   (done)      bundle [new]        issuer new   the record is idle again, active = new
//
// A stage ends only on evidence that every consumer holds what the stage gave
// it (readyToAdvance); the record is stored after every step, so a restarted
// controller resumes where the last one stopped. Pure: no I/O here.

import type { CAKeyPair } from './ca-store.js';
import type { ReplicaStatus } from './replica-evidence.js';

export type RotationStage = 'distribute' | 'reissue' | 'retire';
export const ROTATION_STAGES: readonly RotationStage[] = ['distribute', 'reissue', 'retire'];

/** 0 idle, 1–3 the stages: the value of `skein_ca_rotation_stage`. */
export function stageNumber(stage: RotationStage | undefined): number {
  return stage === undefined ? 0 : ROTATION_STAGES.indexOf(stage) + 1;
}

export interface RotationProgress {
  stage: RotationStage;
  /** Epoch ms the rotation began and the current stage began. */
  startedAt: number;
  stageSince: number;
}

/** What the CA store holds: the root in force, and during a rotation the next one and where it is. */
export interface CARecord {
  active: CAKeyPair;
  next?: CAKeyPair;
  rotation?: RotationProgress;
  /** Asked for (by `skein ca rotate`) and not yet begun; `next` then holds a root the user brings, if any. */
  requested?: { at: number };
  /** Why the last request was refused (shown on /debug/certs until the next request). */
  lastError?: string;
}

/** The roots every peer must trust now, issuing root first. */
export function bundlePairs(rec: CARecord): CAKeyPair[] {
  const stage = rec.rotation?.stage;
  if (stage === undefined || rec.next === undefined) return [rec.active];
  if (stage === 'distribute') return [rec.active, rec.next];
  if (stage === 'reissue') return [rec.next, rec.active];
  return [rec.next];
}

/** The root that signs new leaves now. */
export function issuerPair(rec: CARecord): CAKeyPair {
  const stage = rec.rotation?.stage;
  if (stage === undefined || stage === 'distribute' || rec.next === undefined) return rec.active;
  return rec.next;
}

export class RotationError extends Error {
  override name = 'RotationError';
}

/** Stage 1 begins with `next` as the new root. Refused while another rotation runs. */
export function beginRotation(rec: CARecord, next: CAKeyPair, now: number): CARecord {
  if (rec.rotation !== undefined)
    throw new RotationError(`a root rotation is already in stage ${rec.rotation.stage}`);
  if (next.certPem.trim() === rec.active.certPem.trim())
    throw new RotationError('the new root is the root already in force');
  return { active: rec.active, next, rotation: { stage: 'distribute', startedAt: now, stageSince: now } };
}

/** The record after the current stage ends; the last stage ends the rotation (active = new). */
export function advance(rec: CARecord, now: number): CARecord {
  const r = rec.rotation;
  if (r === undefined || rec.next === undefined) throw new RotationError('no root rotation in progress');
  const i = ROTATION_STAGES.indexOf(r.stage);
  const following = ROTATION_STAGES[i + 1];
  if (following === undefined) return { active: rec.next };
  return { active: rec.active, next: rec.next, rotation: { ...r, stage: following, stageSince: now } };
}

/**
 * What the controller observed about the current stage's consumers. Every
 * count is "not yet holding what this stage gives it".
 */
export interface StageEvidence {
  /** Connected proxies whose last ACKed SDS does not carry this stage's bundle (and, from stage 2, leaf). */
  proxies: number;
  /** Leaves the controller holds (workload, ADS and webhook serving) not yet from this stage. */
  leaves: number;
  /** Bootstrap Secrets and workload files not yet rewritten in this stage, and the webhook caBundle. */
  files: number;
  /** Epoch ms of the last file or Secret write of this stage (what kubelet and file watchers must pick up). */
  lastWriteAt?: number;
  /** Connected proxies the evidence covers (with several replicas: all of theirs). */
  connected?: number;
}

/** A root of the bundle, as /debug/certs shows it. */
export interface RootInfo {
  subject: string;
  /** SHA-256 fingerprint, as Node prints it. */
  fingerprint: string;
  notAfter: string;
  /** Whether it signs new leaves now. */
  issuing: boolean;
}

/** The rotation as /debug/certs and `skein ca status` show it. */
export interface RotationStatus {
  stage: RotationStage | 'idle';
  roots: RootInfo[];
  startedAt?: string;
  stageSince?: string;
  requestedAt?: string;
  /** What the stage still waits for (counts of consumers not yet holding it). */
  pending?: StageEvidence;
  waitingFor?: string;
  lastError?: string;
  /** With several replicas: each live replica's evidence (replica-evidence.ts). */
  replicas?: ReplicaStatus[];
}

export function pendingCount(e: StageEvidence): number {
  return e.proxies + e.leaves + e.files;
}

/**
 * The evidence rule: a stage ends once nothing is pending and the newest
 * write of the stage is at least `deliveryMs` old — kubelet refreshes a
 * mounted Secret within its sync period plus its cache TTL (kubernetes.io
 * "Secrets: mounted Secrets are updated automatically"), and a gRPC
 * file_watcher provider re-reads at its refresh interval, neither of which
 * the controller can observe.
 */
export function readyToAdvance(
  e: StageEvidence,
  now: number,
  deliveryMs: number,
): { ready: boolean; reason: string } {
  const pending = pendingCount(e);
  if (pending > 0)
    return {
      ready: false,
      reason: `waiting for ${e.proxies} proxies, ${e.leaves} leaves, ${e.files} Secrets/files`,
    };
  if (e.lastWriteAt !== undefined && now - e.lastWriteAt < deliveryMs)
    return {
      ready: false,
      reason: `waiting ${Math.ceil((deliveryMs - (now - e.lastWriteAt)) / 1000)} s more for kubelet and file watchers to deliver`,
    };
  return { ready: true, reason: 'every consumer holds this stage' };
}

// The record as stored: the Secret's data keys (local mode: the same keys in one JSON file).
export const RecordKey = {
  cert: 'ca.crt',
  key: 'ca.key',
  nextCert: 'next.crt',
  nextKey: 'next.key',
  state: 'rotation.json',
} as const;

interface StoredState {
  stage?: RotationStage | 'requested';
  startedAt?: number;
  stageSince?: number;
  requestedAt?: number;
  lastError?: string;
}

function isStage(v: unknown): v is RotationStage {
  return typeof v === 'string' && (ROTATION_STAGES as readonly string[]).includes(v);
}

/** Decodes stored keys; throws RotationError naming what is wrong. */
export function decodeRecord(data: Readonly<Record<string, string>>, where: string): CARecord {
  const need = (k: string): string => {
    const v = data[k];
    if (v === undefined || v === '') throw new RotationError(`${where} has no ${k}`);
    return v;
  };
  const rec: CARecord = { active: { certPem: need(RecordKey.cert), keyPem: need(RecordKey.key) } };
  const nextCert = data[RecordKey.nextCert];
  const nextKey = data[RecordKey.nextKey];
  if (nextCert && nextKey) rec.next = { certPem: nextCert, keyPem: nextKey };
  else if (nextCert || nextKey)
    throw new RotationError(
      `${where} has ${nextCert ? RecordKey.nextCert : RecordKey.nextKey} without its pair`,
    );
  const raw = data[RecordKey.state];
  if (raw === undefined || raw === '') return rec;
  let state: StoredState;
  try {
    state = JSON.parse(raw) as StoredState;
  } catch {
    throw new RotationError(`${where} ${RecordKey.state} is not JSON`);
  }
  if (typeof state.lastError === 'string') rec.lastError = state.lastError;
  if (state.stage === 'requested') {
    rec.requested = { at: Number(state.requestedAt) || 0 };
    return rec;
  }
  if (state.stage === undefined) return rec;
  if (!isStage(state.stage))
    throw new RotationError(`${where} names an unknown rotation stage ${String(state.stage)}`);
  if (rec.next === undefined)
    throw new RotationError(`${where} is in stage ${state.stage} without ${RecordKey.nextCert}`);
  rec.rotation = {
    stage: state.stage,
    startedAt: Number(state.startedAt) || 0,
    stageSince: Number(state.stageSince) || 0,
  };
  return rec;
}

/** The keys to store; `next.*` and the state are empty strings when absent (a merge patch then clears them). */
export function encodeRecord(rec: CARecord): Record<string, string> {
  const state: StoredState = {};
  if (rec.rotation) Object.assign(state, rec.rotation);
  else if (rec.requested) Object.assign(state, { stage: 'requested', requestedAt: rec.requested.at });
  if (rec.lastError !== undefined) state.lastError = rec.lastError;
  return {
    [RecordKey.cert]: rec.active.certPem,
    [RecordKey.key]: rec.active.keyPem,
    [RecordKey.nextCert]: rec.next?.certPem ?? '',
    [RecordKey.nextKey]: rec.next?.keyPem ?? '',
    [RecordKey.state]: Object.keys(state).length > 0 ? JSON.stringify(state) : '',
  };
}
