import { KubeConfig } from '@kubernetes/client-node';

export { KubeConfig };

export interface KubeConfigSource {
  /** A kubeconfig file; its current context is used. */
  kubeconfig?: string;
  /** The pod's service account (token, CA and KUBERNETES_SERVICE_HOST/PORT). */
  inCluster?: boolean;
}

/** Loads the API server connection: a kubeconfig file, or in-cluster config. */
export function loadKubeConfig(source: KubeConfigSource): KubeConfig {
  const kc = new KubeConfig();
  if (source.kubeconfig) kc.loadFromFile(source.kubeconfig);
  else if (source.inCluster) kc.loadFromCluster();
  else throw new Error('no Kubernetes configuration: pass --kubeconfig or run in a pod');
  if (!kc.getCurrentCluster())
    throw new Error(`${source.kubeconfig ?? 'in-cluster config'}: no current cluster`);
  return kc;
}
