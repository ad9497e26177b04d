// The ingress gateway's identity at admission. The chart's gateway
// Deployment declares its Envoy container itself (no app, no iptables); what
// it cannot declare is a per-pod proxy certificate. For a pod labelled
// `skein.dev/gateway: ingress` in the control-plane namespace the webhook adds
// what a sidecar gets — the proxy UUID label and the bootstrap Secret mounted
// at /etc/skein — with a `gateway` kind in the certificate CN, so the
// controller serves it the gateway's configuration (pkg/envoy/*/gateway.ts).
// Only there: the kind is a grant (ingress TLS keys), and only the cluster
// admin can create pods in the control-plane namespace.
import { LABEL_GATEWAY, LABEL_PROXY_UUID } from '../mesh/constants.js';
import { proxyCommonName } from '../mesh/identity.js';
import { controllerAddress, envoyBootstrap } from './bootstrap.js';
import { BOOTSTRAP_MOUNT_PATH, BOOTSTRAP_VOLUME_NAME, ENVOY_CONTAINER_NAME } from './constants.js';
import { InjectionError } from './errors.js';
import { type JsonPatchOperation, pointer } from './jsonpatch.js';
import { bootstrapSecret, type MutateOptions, type SecretManifest } from './mutate.js';
import type { PodInfo } from './pod.js';

export const GATEWAY_INGRESS = 'ingress';

export type GatewayDecision = { gateway: false } | { gateway: true } | { gateway: 'done'; reason: string };

/** Whether a pod asks for the gateway identity; throws InjectionError where it may not have it. */
export function decideGateway(
  pod: PodInfo,
  o: { controlPlaneNamespace: string; gatewayEnabled: boolean },
): GatewayDecision {
  const value = pod.labels[LABEL_GATEWAY];
  if (value === undefined) return { gateway: false };
  if (value !== GATEWAY_INGRESS)
    throw new InjectionError(
      `label ${LABEL_GATEWAY}=${value} on pod ${pod.name}: the only gateway is "ingress"`,
    );
  if (!o.gatewayEnabled)
    throw new InjectionError(
      `pod ${pod.name} asks for the ingress gateway identity, but the controller runs without --ingress-gateway (chart: ingressGateway.enabled)`,
    );
  if (pod.namespace !== o.controlPlaneNamespace)
    throw new InjectionError(
      `pod ${pod.name}: the ingress gateway runs only in the control-plane namespace ${o.controlPlaneNamespace}, not ${pod.namespace}`,
    );
  if (pod.labels[LABEL_PROXY_UUID] !== undefined)
    return { gateway: 'done', reason: 'pod already has a proxy UUID' };
  if (!pod.containers.some((c) => c.name === ENVOY_CONTAINER_NAME))
    throw new InjectionError(`gateway pod ${pod.name} has no container named ${ENVOY_CONTAINER_NAME}`);
  if (pod.volumeNames.includes(BOOTSTRAP_VOLUME_NAME))
    throw new InjectionError(`pod already has a volume named ${BOOTSTRAP_VOLUME_NAME}`);
  return { gateway: true };
}

/** The proxy certificate CN of a gateway pod: `<uuid>.gateway.<sa>.<ns>.<trust-domain>`. */
export function gatewayCommonName(pod: PodInfo, proxyUuid: string, trustDomain: string): string {
  return proxyCommonName({
    uuid: proxyUuid,
    kind: 'gateway',
    serviceAccount: pod.serviceAccountName,
    namespace: pod.namespace,
    trustDomain,
  });
}

export interface GatewayMutation {
  patch: JsonPatchOperation[];
  secret: SecretManifest;
  commonName: string;
}

/** The patch and bootstrap Secret of a gateway pod `decideGateway` accepted. */
export function mutateGateway(pod: PodInfo, o: MutateOptions): GatewayMutation {
  const commonName = gatewayCommonName(pod, o.proxyUuid, o.trustDomain);
  const bootstrap = envoyBootstrap({
    nodeId: commonName,
    nodeCluster: `${pod.serviceAccountName}.${pod.namespace}`,
    controller: controllerAddress(o.controlPlaneNamespace, o.clusterDomain, o.controllerServiceName),
    // Kubelet probes the gateway's Envoy on 15900 (initialised = first config applied).
    envoyReadiness: true,
  });
  const secret = bootstrapSecret(pod.namespace, o, bootstrap);
  const index = pod.containers.findIndex((c) => c.name === ENVOY_CONTAINER_NAME);
  const envoy = pod.containers[index];
  const mount = { name: BOOTSTRAP_VOLUME_NAME, mountPath: BOOTSTRAP_MOUNT_PATH, readOnly: true };
  const patch: JsonPatchOperation[] = [
    pod.hasLabels
      ? { op: 'add', path: pointer('metadata', 'labels', LABEL_PROXY_UUID), value: o.proxyUuid }
      : { op: 'add', path: pointer('metadata', 'labels'), value: { [LABEL_PROXY_UUID]: o.proxyUuid } },
    pod.hasVolumes
      ? {
          op: 'add',
          path: pointer('spec', 'volumes', '-'),
          value: { name: BOOTSTRAP_VOLUME_NAME, secret: { secretName: secret.metadata.name } },
        }
      : {
          op: 'add',
          path: pointer('spec', 'volumes'),
          value: [{ name: BOOTSTRAP_VOLUME_NAME, secret: { secretName: secret.metadata.name } }],
        },
    envoy?.hasVolumeMounts
      ? { op: 'add', path: pointer('spec', 'containers', String(index), 'volumeMounts', '-'), value: mount }
      : { op: 'add', path: pointer('spec', 'containers', String(index), 'volumeMounts'), value: [mount] },
  ];
  return { patch, secret, commonName };
}
