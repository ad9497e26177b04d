// Where the controller's CA lives. Local mode: `<state>/ca` on disk.
// Kubernetes mode: a Secret in the control-plane namespace, so every replica
// signs with one root. Either holds the whole CA record (a root rotation's
// stage too, pkg/certificate/rotation.ts), so a restart resumes it.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../certificate/builtin.js';
import {
  type CARecordStore,
  CAStoreError,
  LocalCARecordStore,
  loadOrCreateRecord,
} from '../certificate/ca-store.js';
import { RotatingCA } from '../certificate/rotating-ca.js';
import type { Logger } from '../logger/logger.js';
import type { KubeClient } from '../registry/kube/client.js';

export interface ControllerCAOptions {
  stateDir: string;
  /** Kubernetes mode: the API client; local mode: undefined. */
  kube?: KubeClient;
  namespace: string;
  caSecret: string;
  /** Also copy the CA to `<state>/ca` (workloads run outside the cluster read it there). */
  workloadFiles?: boolean;
  logger: Logger;
  /** Checked between retries: true once the controller is stopping. */
  stopping(): boolean;
}

export interface ControllerCA {
  ca: RotatingCA;
  store: CARecordStore;
  /** Version of the record `ca` was built from. */
  version: string;
}

/** Copies the issuing root to `<state>/ca` for workloads that run outside the cluster. */
export async function writeWorkloadCAFiles(stateDir: string, ca: RotatingCA): Promise<void> {
  const dir = path.join(stateDir, 'ca');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFileAtomic(path.join(dir, 'ca.key'), ca.rootKeyPem, 0o600);
  await writeFileAtomic(path.join(dir, 'ca.crt'), ca.rootCertPem, 0o644);
}

/**
 * Loads or creates the CA. In Kubernetes mode it retries with backoff while
 * the API refuses (the namespace or RBAC may still be on its way), except when
 * the Secret holds something unusable (CAStoreError), which needs a person.
 */
export async function loadControllerCA(o: ControllerCAOptions): Promise<ControllerCA> {
  const dir = path.join(o.stateDir, 'ca');
  if (!o.kube) {
    const store = new LocalCARecordStore(dir);
    const { record, version } = await loadOrCreateRecord(store);
    return { ca: await fromRecordOrExplain(store, record), store, version };
  }
  const { KubeSecretCAStore, KubeSecretCARecordStore } = await import('../certificate/kube-secret-store.js');
  const { Backoff } = await import('../registry/kube/backoff.js');
  const pairs = new KubeSecretCAStore(o.kube, o.namespace, o.caSecret);
  const store = new KubeSecretCARecordStore(o.kube, o.namespace, o.caSecret);
  const backoff = new Backoff();
  for (;;) {
    if (o.stopping()) throw new Error('controller stopped while loading the CA');
    try {
      const { record, version } = await loadOrCreateRecord(store, pairs);
      const ca = await fromRecordOrExplain(store, record);
      o.logger.info({ secret: store.description, stage: record.rotation?.stage ?? 'idle' }, 'CA loaded');
      if (o.workloadFiles) await writeWorkloadCAFiles(o.stateDir, ca);
      return { ca, store, version };
    } catch (err) {
      if (err instanceof CAStoreError) throw err;
      const delay = backoff.next();
      o.logger.warn(
        { err, secret: store.description, retryInMs: Math.round(delay) },
        'cannot load the CA; retrying',
      );
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

async function fromRecordOrExplain(
  store: CARecordStore,
  record: Parameters<typeof RotatingCA.fromRecord>[0],
): Promise<RotatingCA> {
  try {
    return await RotatingCA.fromRecord(record);
  } catch (err) {
    throw new CAStoreError(
      `cannot use the CA in ${store.description}: ${(err as Error).message}; delete it to create a new CA (certificates issued by the old one stop being trusted)`,
    );
  }
}
