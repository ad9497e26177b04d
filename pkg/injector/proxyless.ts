// Injection of a proxyless gRPC pod (`skein.dev/proxyless: "true"`): no Envoy,
// no iptables. grpc-js-xds cannot present a certificate to its control plane
// (its bootstrap accepts only `insecure` and `google_default` channel_creds),
// so the pod gets the skein agent, which holds the pod's certificate, speaks
// mTLS to the controller and relays the workload's plaintext ADS from a Unix
// socket in a volume only this pod mounts (pkg/agent/forwarder.ts). The same
// certificate is the workload's data-plane identity (gRFC A29 file_watcher):
// its CN names the proxy, its URI SAN the SPIFFE identity callers pin.
import { proxylessBootstrap } from '../bootstrap/proxyless.js';
import { LABEL_PROXY_UUID } from '../mesh/constants.js';
import { proxyCommonName } from '../mesh/identity.js';
import { controllerAddress } from './bootstrap.js';
import {
  AGENT_CONTAINER_NAME,
  AGENT_RUN_PATH,
  AGENT_SOCKET_PATH,
  AGENT_VOLUME_NAME,
  ANNOTATION_PROXYLESS,
  BOOTSTRAP_MOUNT_PATH,
  BOOTSTRAP_VOLUME_NAME,
  PROXY_UID,
  SecretKey,
} from './constants.js';
import { badAnnotation, InjectionError } from './errors.js';
import { type JsonPatchOperation, pointer } from './jsonpatch.js';
import { podLayout, type SidecarLayout } from './layout.js';
import { append, type MutateOptions, proxySecret, type SecretManifest } from './mutate.js';
import type { JsonObject, PodInfo } from './pod.js';

/** Whether the pod asks to be a proxyless workload. Throws InjectionError on a value other than "true"/"false". */
export function isProxyless(pod: PodInfo): boolean {
  const v = pod.annotations[ANNOTATION_PROXYLESS];
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  throw badAnnotation(ANNOTATION_PROXYLESS, `pod ${pod.name}`, v, 'use "true" or "false"');
}

/** The proxy CN of a proxyless pod: `<uuid>.grpc.<sa>.<ns>.<trust-domain>`. */
export function proxylessCommonName(pod: PodInfo, proxyUuid: string, trustDomain: string): string {
  return proxyCommonName({
    uuid: proxyUuid,
    kind: 'grpc',
    serviceAccount: pod.serviceAccountName,
    namespace: pod.namespace,
    trustDomain,
  });
}

/** The gRPC bootstrap path the app containers get in GRPC_XDS_BOOTSTRAP. */
export const GRPC_BOOTSTRAP_PATH = `${BOOTSTRAP_MOUNT_PATH}/${SecretKey.grpcBootstrap}`;

export interface ProxylessMutation {
  patch: JsonPatchOperation[];
  secret: SecretManifest;
  commonName: string;
  layout: SidecarLayout;
}

/** Everything that makes a proxyless pod uninjectable, checked before a certificate is issued. */
export function checkProxylessPod(pod: PodInfo, o: Pick<MutateOptions, 'images'>): void {
  podLayout(pod, false);
  for (const name of [BOOTSTRAP_VOLUME_NAME, AGENT_VOLUME_NAME])
    if (pod.volumeNames.includes(name)) throw new InjectionError(`pod already has a volume named ${name}`);
  if (!o.images.agent)
    throw new InjectionError('proxyless pods need the agent image, and none is configured');
}

/** The agent container's command: Node and skein-agent as the controller image lays them out. */
export const AGENT_COMMAND = ['/usr/local/bin/node', '/app/dist/cmd/skein-agent/main.js'] as const;

function agentContainer(o: MutateOptions, image: string, layout: SidecarLayout): JsonObject {
  const ads = controllerAddress(o.controlPlaneNamespace, o.clusterDomain, o.controllerServiceName);
  const c: JsonObject = {
    name: AGENT_CONTAINER_NAME,
    image,
    imagePullPolicy: 'IfNotPresent',
    command: [...AGENT_COMMAND],
    args: ['--controller', `${ads.host}:${ads.port}`, '--listen', `unix:${AGENT_SOCKET_PATH}`],
    securityContext: {
      runAsUser: PROXY_UID,
      runAsGroup: PROXY_UID,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    },
    volumeMounts: [
      { name: BOOTSTRAP_VOLUME_NAME, mountPath: BOOTSTRAP_MOUNT_PATH, readOnly: true },
      { name: AGENT_VOLUME_NAME, mountPath: AGENT_RUN_PATH },
    ],
  };
  if (o.envoyResources) c['resources'] = o.envoyResources;
  // KEP-753: started before the app and stopped after it, so the workload's ADS stream has its relay.
  if (layout === 'native') c['restartPolicy'] = 'Always';
  return c;
}

/** The patch and Secret of a proxyless pod `decide` accepted. Throws InjectionError. */
export function mutateProxyless(pod: PodInfo, o: MutateOptions): ProxylessMutation {
  checkProxylessPod(pod, o);
  const layout = podLayout(pod, o.nativeSidecars ?? false);
  const commonName = proxylessCommonName(pod, o.proxyUuid, o.trustDomain);
  const bootstrap = proxylessBootstrap({
    serverUri: `unix:${AGENT_SOCKET_PATH}`,
    nodeId: commonName,
    // The same files the agent presents to the controller: kubelet swaps them on rotation and
    // grpc-js-xds's file_watcher re-reads them every refresh_interval.
    certFiles: {
      certFile: `${BOOTSTRAP_MOUNT_PATH}/${SecretKey.cert}`,
      keyFile: `${BOOTSTRAP_MOUNT_PATH}/${SecretKey.key}`,
      caFile: `${BOOTSTRAP_MOUNT_PATH}/${SecretKey.ca}`,
    },
  });
  const secret = proxySecret(pod.namespace, o, {
    [SecretKey.grpcBootstrap]: JSON.stringify(bootstrap, null, 2),
  });
  const mounts: JsonObject[] = [
    { name: BOOTSTRAP_VOLUME_NAME, mountPath: BOOTSTRAP_MOUNT_PATH, readOnly: true },
    { name: AGENT_VOLUME_NAME, mountPath: AGENT_RUN_PATH },
  ];
  const env = { name: 'GRPC_XDS_BOOTSTRAP', value: GRPC_BOOTSTRAP_PATH };
  const agent = agentContainer(o, o.images.agent ?? '', layout);
  const patch: JsonPatchOperation[] = [
    pod.hasLabels
      ? { op: 'add', path: pointer('metadata', 'labels', LABEL_PROXY_UUID), value: o.proxyUuid }
      : { op: 'add', path: pointer('metadata', 'labels'), value: { [LABEL_PROXY_UUID]: o.proxyUuid } },
    append(['spec', 'volumes'], pod.hasVolumes, {
      name: BOOTSTRAP_VOLUME_NAME,
      secret: { secretName: secret.metadata.name },
    }),
    append(['spec', 'volumes'], true, { name: AGENT_VOLUME_NAME, emptyDir: { medium: 'Memory' } }),
    ...pod.containers.flatMap((c, i) => [
      ...mounts.map((m, k) =>
        append(['spec', 'containers', String(i), 'volumeMounts'], c.hasVolumeMounts || k > 0, m),
      ),
      // Appended: a GRPC_XDS_BOOTSTRAP the pod set itself comes first, and the last one wins.
      append(['spec', 'containers', String(i), 'env'], c.hasEnv, env),
    ]),
    layout === 'native'
      ? append(['spec', 'initContainers'], pod.hasInitContainers, agent)
      : append(['spec', 'containers'], true, agent),
  ];
  return { patch, secret, commonName, layout };
}
