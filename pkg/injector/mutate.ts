// The admission mutation as pure functions: whether to inject a pod, and the
// JSON Patch plus bootstrap Secret that inject it. No I/O, no clock, no
// randomness: the proxy UUID and its certificate come in as inputs, so the
// webhook owns every side effect.
import {
  ANNOTATION_SIDECAR_INJECTION,
  LABEL_MONITORED_BY,
  LABEL_PROXY_UUID,
  PORT_ENVOY_ADMIN,
  PORT_INBOUND_LISTENER,
  PORT_OUTBOUND_LISTENER,
  PORT_PROMETHEUS_LISTENER,
} from '../mesh/constants.js';
import { proxyCommonName } from '../mesh/identity.js';
import { adsSdsFiles, controllerAddress, envoyBootstrap } from './bootstrap.js';
import {
  AGENT_CONTAINER_NAME,
  ANNOTATION_ENVOY_IMAGE,
  ANNOTATION_INTERCEPTION,
  BOOTSTRAP_MOUNT_PATH,
  BOOTSTRAP_VOLUME_NAME,
  bootstrapSecretName,
  ENVOY_CONTAINER_NAME,
  INIT_CONTAINER_NAME,
  PROXY_UID,
  SecretKey,
  SYSTEM_NAMESPACES,
} from './constants.js';
import { badAnnotation, InjectionError } from './errors.js';
import { type Exclusions, mergeExclusions, NO_EXCLUSIONS, parseExclusions } from './exclusions.js';
import { defaultProxyServedPorts, renderIptablesRules } from './iptables.js';
import { type JsonPatchOperation, pointer } from './jsonpatch.js';
import { envoyReadinessProbe, envoyStartupProbe, podLayout, type SidecarLayout } from './layout.js';
import type { Json, JsonObject, PodInfo } from './pod.js';
import { planProbes } from './probes.js';
import { podSidecarSettings, type SidecarSettings } from './sidecar-settings.js';
import { planStartupGrace } from './startup-grace.js';

/** The namespace fields injection depends on (a model Namespace fits). */
export interface NamespaceLike {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}

export interface DecideOptions {
  meshName: string;
  /** The controller's namespace: never injected. */
  controlPlaneNamespace: string;
}

export type Decision = { inject: true } | { inject: false; reason: string };

function injectionSetting(value: string | undefined, where: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'enabled') return true;
  if (value === 'disabled') return false;
  throw badAnnotation(ANNOTATION_SIDECAR_INJECTION, where, value, 'use "enabled" or "disabled"');
}

/** Whether a pod gets a sidecar. Throws InjectionError when an injection annotation is malformed. */
export function decide(pod: PodInfo, namespace: NamespaceLike, o: DecideOptions): Decision {
  const ns = namespace.metadata.name;
  if (SYSTEM_NAMESPACES.includes(ns) || ns === o.controlPlaneNamespace)
    return { inject: false, reason: `namespace ${ns} is a system namespace` };
  const monitoredBy = namespace.metadata.labels?.[LABEL_MONITORED_BY];
  if (monitoredBy !== o.meshName)
    return { inject: false, reason: `namespace ${ns} is not labelled ${LABEL_MONITORED_BY}=${o.meshName}` };
  // Idempotence: a re-invoked webhook (reinvocationPolicy, retries) sees its own output,
  // with Envoy as a container (classic) or an init container (native).
  if (
    pod.containers.some((c) => c.name === ENVOY_CONTAINER_NAME) ||
    pod.initContainerNames.includes(ENVOY_CONTAINER_NAME) ||
    pod.initContainerNames.includes(INIT_CONTAINER_NAME) ||
    pod.containers.some((c) => c.name === AGENT_CONTAINER_NAME) ||
    pod.initContainerNames.includes(AGENT_CONTAINER_NAME) ||
    pod.labels[LABEL_PROXY_UUID] !== undefined
  )
    return { inject: false, reason: 'pod already has a sidecar' };
  // hostNetwork pods share the node's network namespace: iptables there would capture the node.
  if (pod.hostNetwork) return { inject: false, reason: 'pod uses the host network' };
  // The pod's annotation wins over the namespace's.
  const setting =
    injectionSetting(pod.annotations[ANNOTATION_SIDECAR_INJECTION], `pod ${pod.name}`) ??
    injectionSetting(namespace.metadata.annotations?.[ANNOTATION_SIDECAR_INJECTION], `namespace ${ns}`);
  if (setting === undefined)
    return { inject: false, reason: `${ANNOTATION_SIDECAR_INJECTION} is not enabled` };
  if (!setting) return { inject: false, reason: `${ANNOTATION_SIDECAR_INJECTION} is disabled` };
  return { inject: true };
}

export interface SidecarImages {
  envoy: string;
  init: string;
  /** The image with `skein-agent` (the controller's), for proxyless pods. */
  agent?: string;
}

export interface ProxyCertificate {
  certPem: string;
  keyPem: string;
  caPem: string;
}

export interface MutateOptions {
  meshName: string;
  trustDomain: string;
  controlPlaneNamespace: string;
  clusterDomain?: string;
  /** The controller's Service name, for the bootstrap's ADS address (default `skein-controller`). */
  controllerServiceName?: string;
  images: SidecarImages;
  /** A fresh UUID (the caller's randomness keeps this function pure). */
  proxyUuid: string;
  /** Issued for `sidecarCommonName(...)` with the same UUID. */
  certificate: ProxyCertificate;
  /** core/v1 ResourceRequirements of the Envoy container. */
  envoyResources?: JsonObject;
  /** The mesh's sidecar settings (MeshConfig `spec.sidecar`); the pod's annotations override them. */
  sidecar?: SidecarSettings;
  /**
   * The mesh's interception lists (MeshConfig `spec.traffic`), merged with the
   * pod's annotations (exclusions.ts). Default: none.
   */
  meshExclusions?: Exclusions;
  /**
   * Inject Envoy as a native sidecar (layout.ts) unless the pod's
   * `skein.dev/native-sidecar` annotation says otherwise. Default false: classic.
   */
  nativeSidecars?: boolean;
}

/** A core/v1 Secret to create (stringData: the API server encodes it). */
export interface SecretManifest {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  type: 'Opaque';
  stringData: Record<string, string>;
}

export interface Mutation {
  patch: JsonPatchOperation[];
  secret: SecretManifest;
  proxyUuid: string;
  commonName: string;
  iptablesRules: string;
  /** What the rules were rendered from: the mesh's lists merged with the pod's annotations. */
  exclusions: Exclusions;
  bootstrap: JsonObject;
  /** What the bootstrap was built with, after the pod's annotations. */
  sidecar: SidecarSettings;
  layout: SidecarLayout;
}

/** The proxy certificate CN for a pod: `<uuid>.sidecar.<sa>.<ns>.<trust-domain>`. */
export function sidecarCommonName(pod: PodInfo, proxyUuid: string, trustDomain: string): string {
  return proxyCommonName({
    uuid: proxyUuid,
    kind: 'sidecar',
    serviceAccount: pod.serviceAccountName,
    namespace: pod.namespace,
    trustDomain,
  });
}

/**
 * Everything that can make a pod uninjectable (bad exclusion annotations,
 * unresolvable probe ports), without building anything: the webhook calls it
 * before issuing a certificate.
 */
export function checkPod(pod: PodInfo): void {
  parseExclusions(pod.annotations);
  planProbes(pod);
  envoyImageOf(pod, '');
  podSidecarSettings(pod);
  podLayout(pod, false);
  if (pod.volumeNames.includes(BOOTSTRAP_VOLUME_NAME))
    throw new InjectionError(`pod already has a volume named ${BOOTSTRAP_VOLUME_NAME}`);
}

// An OCI image reference, loosely: what a container runtime would accept, so a typo fails admission.
const IMAGE_REFERENCE = /^[a-z0-9]([a-z0-9._/:-]*[a-z0-9])?(@sha256:[a-f0-9]{64})?$/i;

/** The pod's Envoy image: its annotation, else the webhook's default. Throws InjectionError. */
export function envoyImageOf(pod: PodInfo, fallback: string): string {
  const image = pod.annotations[ANNOTATION_ENVOY_IMAGE];
  if (image === undefined) return fallback;
  if (!IMAGE_REFERENCE.test(image) || image.length > 512)
    throw new InjectionError(
      `annotation ${ANNOTATION_ENVOY_IMAGE} on pod ${pod.name} is ${JSON.stringify(image)}, not an image reference`,
    );
  return image;
}

function envoyContainer(
  pod: PodInfo,
  o: MutateOptions,
  layout: SidecarLayout,
  sidecar: SidecarSettings,
): JsonObject {
  const c: JsonObject = {
    name: ENVOY_CONTAINER_NAME,
    image: envoyImageOf(pod, o.images.envoy),
    imagePullPolicy: 'IfNotPresent',
    command: ['envoy'],
    args: [
      '--config-path',
      `${BOOTSTRAP_MOUNT_PATH}/${SecretKey.bootstrap}`,
      // MeshConfig spec.sidecar.logLevel, read at this admission (controller/settings.ts).
      '--log-level',
      sidecar.logLevel,
    ],
    // The UID iptables lets through (iptables.ts): the proxy's own traffic is never redirected.
    securityContext: {
      runAsUser: PROXY_UID,
      runAsGroup: PROXY_UID,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    },
    ports: [
      { name: 'proxy-admin', containerPort: PORT_ENVOY_ADMIN },
      { name: 'proxy-outbound', containerPort: PORT_OUTBOUND_LISTENER },
      { name: 'proxy-inbound', containerPort: PORT_INBOUND_LISTENER },
      { name: 'proxy-metrics', containerPort: PORT_PROMETHEUS_LISTENER },
    ],
    volumeMounts: [{ name: BOOTSTRAP_VOLUME_NAME, mountPath: BOOTSTRAP_MOUNT_PATH, readOnly: true }],
  };
  if (o.envoyResources) c['resources'] = o.envoyResources;
  if (layout === 'native') {
    // KEP-753: an init container with restartPolicy Always is a sidecar; kubelet
    // holds the app back until its startupProbe passes.
    c['restartPolicy'] = 'Always';
    c['startupProbe'] = envoyStartupProbe();
  }
  // Either layout: the pod is Ready (in Service endpoints) only while Envoy is LIVE. In the
  // classic layout an app without a readiness probe was Ready before Envoy had an inbound
  // listener, and callers' connections to it failed until Envoy got its config.
  c['readinessProbe'] = envoyReadinessProbe();
  return c;
}

export const IPTABLES_RULES_ENV = 'SKEIN_IPTABLES_RULES';

function initContainer(o: MutateOptions, rules: string): JsonObject {
  return {
    name: INIT_CONTAINER_NAME,
    image: o.images.init,
    imagePullPolicy: 'IfNotPresent',
    // The rules travel in the pod spec (visible with kubectl) and reach iptables-restore on stdin;
    // the nat table is printed afterwards for `kubectl logs -c skein-init`.
    command: [
      '/bin/sh',
      '-c',
      `printf '%s\\n' "$${IPTABLES_RULES_ENV}" | iptables-restore && iptables-save -t nat`,
    ],
    env: [{ name: IPTABLES_RULES_ENV, value: rules }],
    // Root with only the capabilities iptables needs, whatever the pod's own securityContext says.
    securityContext: {
      runAsUser: 0,
      runAsNonRoot: false,
      allowPrivilegeEscalation: false,
      capabilities: { add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] },
    },
  };
}

/** Appends to a pod array, creating it when the pod has none (RFC 6902 `add` needs the parent). */
export function append(path: string[], exists: boolean, value: Json): JsonPatchOperation {
  return exists
    ? { op: 'add', path: pointer(...path, '-'), value }
    : { op: 'add', path: pointer(...path), value: [value] };
}

/** The Secret the Envoy of one proxy UUID boots from: its Bootstrap, the ADS SDS files, its certificate. */
export function bootstrapSecret(
  namespace: string,
  o: Pick<MutateOptions, 'meshName' | 'proxyUuid' | 'certificate'>,
  bootstrap: JsonObject,
): SecretManifest {
  const sds = adsSdsFiles();
  return proxySecret(namespace, o, {
    [SecretKey.bootstrap]: JSON.stringify(bootstrap, null, 2),
    [SecretKey.adsCertSds]: JSON.stringify(sds.cert, null, 2),
    [SecretKey.adsCaSds]: JSON.stringify(sds.ca, null, 2),
  });
}

/** The Secret of one proxy UUID: its certificate, key and CA, plus `files`. */
export function proxySecret(
  namespace: string,
  o: Pick<MutateOptions, 'meshName' | 'proxyUuid' | 'certificate'>,
  files: Record<string, string>,
): SecretManifest {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: bootstrapSecretName(o.proxyUuid),
      namespace,
      // Lets the controller find (and garbage-collect) the Secret of a proxy UUID whose pod is gone.
      labels: {
        [LABEL_PROXY_UUID]: o.proxyUuid,
        'app.kubernetes.io/managed-by': 'skein',
        'skein.dev/mesh': o.meshName,
      },
    },
    type: 'Opaque',
    stringData: {
      ...files,
      [SecretKey.cert]: o.certificate.certPem,
      [SecretKey.key]: o.certificate.keyPem,
      [SecretKey.ca]: o.certificate.caPem,
    },
  };
}

/** The JSON Patch and bootstrap Secret that inject a pod `decide` accepted. Throws InjectionError. */
export function mutate(pod: PodInfo, o: MutateOptions): Mutation {
  checkPod(pod);
  const exclusions = mergeExclusions(o.meshExclusions ?? NO_EXCLUSIONS, parseExclusions(pod.annotations));
  const probes = planProbes(pod);
  const commonName = sidecarCommonName(pod, o.proxyUuid, o.trustDomain);
  const sidecar = podSidecarSettings(pod, o.sidecar);
  const layout = podLayout(pod, o.nativeSidecars ?? false);
  const iptablesRules = renderIptablesRules({
    exclusions,
    proxyServedPorts: defaultProxyServedPorts(probes.ports, true),
  });
  const bootstrap = envoyBootstrap({
    nodeId: commonName,
    nodeCluster: `${pod.serviceAccountName}.${pod.namespace}`,
    controller: controllerAddress(o.controlPlaneNamespace, o.clusterDomain, o.controllerServiceName),
    probes: probes.forwards,
    xdsTransport: sidecar.xdsTransport,
    maxDownstreamConnections: sidecar.maxDownstreamConnections,
    envoyReadiness: true,
  });
  const secret = bootstrapSecret(pod.namespace, o, bootstrap);
  const secretName = secret.metadata.name;
  const recorded = JSON.stringify(exclusions);
  const patch: JsonPatchOperation[] = [
    pod.hasLabels
      ? { op: 'add', path: pointer('metadata', 'labels', LABEL_PROXY_UUID), value: o.proxyUuid }
      : { op: 'add', path: pointer('metadata', 'labels'), value: { [LABEL_PROXY_UUID]: o.proxyUuid } },
    pod.hasAnnotations
      ? { op: 'add', path: pointer('metadata', 'annotations', ANNOTATION_INTERCEPTION), value: recorded }
      : {
          op: 'add',
          path: pointer('metadata', 'annotations'),
          value: { [ANNOTATION_INTERCEPTION]: recorded },
        },
    append(['spec', 'volumes'], pod.hasVolumes, { name: BOOTSTRAP_VOLUME_NAME, secret: { secretName } }),
    // After the pod's own, so earlier init containers keep a network without interception (no proxy runs yet).
    append(['spec', 'initContainers'], pod.hasInitContainers, initContainer(o, iptablesRules)),
    // Native: right after skein-init, so the rules are in place before Envoy and the app start;
    // the previous operation made sure the array exists.
    layout === 'native'
      ? append(['spec', 'initContainers'], true, envoyContainer(pod, o, layout, sidecar))
      : append(['spec', 'containers'], true, envoyContainer(pod, o, layout, sidecar)),
    ...probes.rewrites.map(
      (r): JsonPatchOperation => ({
        op: 'replace',
        path: pointer('spec', 'containers', r.container, r.kind, r.handler),
        value: r.value,
      }),
    ),
    // Classic: Envoy starts with the app, so its probes need time for Envoy's initialisation.
    ...(layout === 'classic' ? planStartupGrace(pod, probes) : []).map(
      (g): JsonPatchOperation => ({
        op: g.op,
        path: pointer('spec', 'containers', g.container, 'startupProbe'),
        value: g.probe,
      }),
    ),
  ];
  return {
    patch,
    secret,
    proxyUuid: o.proxyUuid,
    commonName,
    iptablesRules,
    exclusions,
    bootstrap,
    sidecar,
    layout,
  };
}
