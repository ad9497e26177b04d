import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { proxylessBootstrap } from '../bootstrap/proxyless.js';
import type { MeshView } from '../catalog/types.js';
import { monitoredNamespaces } from '../catalog/view.js';
import { writeFileAtomic } from '../certificate/builtin.js';
import { WorkloadCertWriter } from '../certificate/files.js';
import type { Logger } from '../logger/logger.js';
import { LABEL_PROXY_UUID } from '../mesh/constants.js';
import { type Identity, identityKey, proxyCommonName } from '../mesh/identity.js';
import type { Pod } from '../model/objects.js';

export interface LocalWorkloadsOptions {
  writer: WorkloadCertWriter;
  /** `<state>/workloads`, where the writer keeps certificates. */
  certsDir: string;
  /** `<state>/bootstrap`: one gRPC xDS bootstrap per pod, `<ns>/<pod>.json`. */
  bootstrapDir: string;
  /** `host:port` of the plaintext ADS port; bootstraps are written only when it is enabled. */
  insecureAdsAddress?: string;
  logger: Logger;
}

/**
 * Local mode stands in for what the injector does in a cluster: every meshed
 * pod's identity gets certificate files (kept rotated by the
 * WorkloadCertWriter) and every pod with a proxy UUID gets a proxyless gRPC
 * bootstrap pointing at this controller, so the demo and the tests start a
 * workload with nothing but `GRPC_XDS_BOOTSTRAP=<file>`. Kubernetes mode
 * does the same with `--workload-files` (workloads outside the cluster).
 */
export class LocalWorkloads {
  private readonly tracked = new Set<string>();
  private readonly written = new Map<string, string>();

  constructor(private readonly o: LocalWorkloadsOptions) {}

  /** Brings the files in line with the pods of the mesh; never throws. */
  async sync(pods: readonly Pod[], view: MeshView): Promise<void> {
    const namespaces = new Set(monitoredNamespaces(view));
    const work: Promise<void>[] = [];
    for (const pod of pods) {
      const ns = pod.metadata.namespace ?? 'default';
      if (!namespaces.has(ns)) continue;
      const id: Identity = { namespace: ns, serviceAccount: pod.spec?.serviceAccountName || 'default' };
      work.push(this.track(id));
      const uuid = pod.metadata.labels?.[LABEL_PROXY_UUID];
      if (uuid && this.o.insecureAdsAddress !== undefined) {
        work.push(
          this.writeBootstrap(pod.metadata.name, uuid, id, view.trustDomain, this.o.insecureAdsAddress),
        );
      }
    }
    for (const r of await Promise.allSettled(work)) {
      if (r.status === 'rejected') this.o.logger.error({ err: r.reason }, 'local workload files not written');
    }
  }

  /** Path of a pod's bootstrap file. */
  bootstrapPath(namespace: string, pod: string): string {
    return path.join(this.o.bootstrapDir, namespace, `${pod}.json`);
  }

  private async track(id: Identity): Promise<void> {
    const key = identityKey(id);
    if (this.tracked.has(key)) return;
    this.tracked.add(key);
    try {
      await this.o.writer.track(id);
    } catch (err) {
      this.tracked.delete(key); // retried on the next sync
      throw err;
    }
  }

  private async writeBootstrap(pod: string, uuid: string, id: Identity, trustDomain: string, ads: string) {
    const file = this.bootstrapPath(id.namespace, pod);
    const bootstrap = proxylessBootstrap({
      serverUri: ads,
      nodeId: proxyCommonName({ uuid, kind: 'grpc', ...id, trustDomain }),
      certFiles: WorkloadCertWriter.pathsFor(this.o.certsDir, id),
    });
    const content = `${JSON.stringify(bootstrap, null, 2)}\n`;
    if (this.written.get(file) === content) return;
    await mkdir(path.dirname(file), { recursive: true });
    await writeFileAtomic(file, content, 0o644);
    this.written.set(file, content);
  }
}
