// Where the controller's CA lives. Local mode: `<state>/ca` on disk.
// Kubernetes mode: a Secret in the control-plane namespace, so every replica
// signs with one root.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { BuiltinCA, writeFileAtomic } from '../certificate/builtin.js';
import { CAStoreError, loadOrCreateCA } from '../certificate/ca-store.js';
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

/**
 * Loads or creates the CA. In Kubernetes mode it retries with backoff while
 * the API refuses (the namespace or RBAC may still be on its way), except when
 * the Secret holds something unusable (CAStoreError), which needs a person.
 */
export async function loadControllerCA(o: ControllerCAOptions): Promise<BuiltinCA> {
  const dir = path.join(o.stateDir, 'ca');
  if (!o.kube) return BuiltinCA.loadOrCreate(dir);
  const { KubeSecretCAStore } = await import('../certificate/kube-secret-store.js');
  const { Backoff } = await import('../registry/kube/backoff.js');
  const store = new KubeSecretCAStore(o.kube, o.namespace, o.caSecret);
  const backoff = new Backoff();
  for (;;) {
    if (o.stopping()) throw new Error('controller stopped while loading the CA');
    try {
      const ca = await loadOrCreateCA(store);
      o.logger.info({ secret: store.description }, 'CA loaded');
      if (o.workloadFiles) {
        await mkdir(dir, { recursive: true, mode: 0o700 });
        await writeFileAtomic(path.join(dir, 'ca.key'), ca.rootKeyPem, 0o600);
        await writeFileAtomic(path.join(dir, 'ca.crt'), ca.rootCertPem, 0o644);
      }
      return ca;
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
