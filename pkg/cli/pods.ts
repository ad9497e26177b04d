// Pods named on the command line: `<pod> -n <ns>` or `<ns>/<pod>` (which wins over -n).
import { LABEL_PROXY_UUID } from '../mesh/constants.js';
import { CliError, UsageError } from './errors.js';
import type { Kube } from './kube.js';

export interface PodRef {
  namespace: string;
  name: string;
}

export function parsePodRef(arg: string, defaultNamespace: string | undefined): PodRef {
  const slash = arg.indexOf('/');
  if (slash < 0) return { namespace: defaultNamespace ?? 'default', name: arg };
  const namespace = arg.slice(0, slash);
  const name = arg.slice(slash + 1);
  if (!namespace || !name || name.includes('/'))
    throw new UsageError(`${JSON.stringify(arg)} is not a pod: use <pod> (with -n <ns>) or <ns>/<pod>`);
  return { namespace, name };
}

export function podPath(p: PodRef): string {
  return `/api/v1/namespaces/${encodeURIComponent(p.namespace)}/pods/${encodeURIComponent(p.name)}`;
}

/** The raw pod, or CliError "pod not found". */
export async function readPod(kube: Kube, p: PodRef): Promise<Record<string, unknown>> {
  const pod = await kube.get(podPath(p));
  if (!pod) throw new CliError(`pod ${p.namespace}/${p.name} not found (in ${kube.where})`);
  return pod;
}

/** The pod's proxy UUID label, or CliError explaining why the pod has none. */
export function proxyUuidOf(pod: Record<string, unknown>, p: PodRef): string {
  const meta = pod['metadata'];
  const labels = typeof meta === 'object' && meta !== null ? Reflect.get(meta, 'labels') : undefined;
  const uuid =
    typeof labels === 'object' && labels !== null ? Reflect.get(labels, LABEL_PROXY_UUID) : undefined;
  if (typeof uuid !== 'string' || uuid === '')
    throw new CliError(
      `pod ${p.namespace}/${p.name} is not in the mesh: it has no ${LABEL_PROXY_UUID} label (add its namespace with \`skein namespace add ${p.namespace}\`, then restart the pod so the sidecar is injected)`,
    );
  return uuid;
}
