// Reads the parts of an incoming Pod (AdmissionReview `request.object`, plain
// JSON) the injector decides on. The object is untrusted input: every field is
// checked with a guard, and the raw JSON is kept so JSON Patch paths address
// exactly what the API server sent.
import { InjectionError } from './errors.js';

export type Json = null | boolean | number | string | Json[] | JsonObject;
export type JsonObject = { [key: string]: Json };

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export const PROBE_KINDS = ['livenessProbe', 'readinessProbe', 'startupProbe'] as const;
export type ProbeKind = (typeof PROBE_KINDS)[number];

export interface ContainerInfo {
  name: string;
  /** Named container ports, for probes that refer to a port by name. */
  portsByName: Map<string, number>;
  probes: Partial<Record<ProbeKind, JsonObject>>;
  /** Whether `volumeMounts` exists (JSON Patch must `add` a missing array before appending). */
  hasVolumeMounts: boolean;
  /** Whether `env` exists (likewise). */
  hasEnv: boolean;
}

export interface PodInfo {
  /** May be empty at admission time (generateName); for messages only. */
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  hostNetwork: boolean;
  serviceAccountName: string;
  containers: ContainerInfo[];
  initContainerNames: string[];
  /** Whether the arrays exist: JSON Patch must `add` a missing array before appending to it. */
  hasInitContainers: boolean;
  hasVolumes: boolean;
  hasLabels: boolean;
  hasAnnotations: boolean;
  volumeNames: string[];
}

function stringMap(v: Json | undefined, what: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (!isJsonObject(v)) throw new InjectionError(`pod ${what} is not an object`);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string')
      throw new InjectionError(`pod ${what}[${JSON.stringify(k)}] is not a string`);
    out[k] = val;
  }
  return out;
}

function objectArray(v: Json | undefined, what: string): JsonObject[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every(isJsonObject))
    throw new InjectionError(`pod ${what} is not a list of objects`);
  return v;
}

function named(o: JsonObject, what: string): string {
  const n = o['name'];
  if (typeof n !== 'string' || n === '') throw new InjectionError(`pod ${what} has no name`);
  return n;
}

function container(c: JsonObject, i: number): ContainerInfo {
  const name = named(c, `spec.containers[${i}]`);
  const portsByName = new Map<string, number>();
  for (const p of objectArray(c['ports'], `container ${name} ports`)) {
    if (typeof p['name'] === 'string' && typeof p['containerPort'] === 'number')
      portsByName.set(p['name'], p['containerPort']);
  }
  const probes: Partial<Record<ProbeKind, JsonObject>> = {};
  for (const kind of PROBE_KINDS) {
    const probe = c[kind];
    if (probe === undefined || probe === null) continue;
    if (!isJsonObject(probe)) throw new InjectionError(`container ${name} ${kind} is not an object`);
    probes[kind] = probe;
  }
  return {
    name,
    portsByName,
    probes,
    hasVolumeMounts: Array.isArray(c['volumeMounts']),
    hasEnv: Array.isArray(c['env']),
  };
}

/**
 * Reads a Pod from admission JSON. `requestNamespace` is the AdmissionRequest's
 * namespace: a pod being created often has no metadata.namespace yet.
 */
export function readPod(raw: unknown, requestNamespace?: string): PodInfo {
  if (!isJsonObject(raw)) throw new InjectionError('the admitted object is not a Pod object');
  if (raw['kind'] !== undefined && raw['kind'] !== 'Pod')
    throw new InjectionError(`the admitted object is a ${String(raw['kind'])}, not a Pod`);
  const metadata = raw['metadata'] ?? {};
  const spec = raw['spec'];
  if (!isJsonObject(metadata)) throw new InjectionError('pod metadata is not an object');
  if (!isJsonObject(spec)) throw new InjectionError('pod has no spec');
  const ns =
    typeof metadata['namespace'] === 'string' && metadata['namespace'] !== '' ? metadata['namespace'] : '';
  const namespace = ns || requestNamespace || '';
  if (namespace === '') throw new InjectionError('pod has no namespace');
  const name =
    typeof metadata['name'] === 'string' && metadata['name'] !== ''
      ? metadata['name']
      : typeof metadata['generateName'] === 'string'
        ? `${metadata['generateName']}<generated>`
        : '<unnamed>';
  const containers = objectArray(spec['containers'], 'spec.containers').map(container);
  if (containers.length === 0) throw new InjectionError('pod has no containers');
  const initContainers = objectArray(spec['initContainers'], 'spec.initContainers');
  const volumes = objectArray(spec['volumes'], 'spec.volumes');
  // serviceAccount is the deprecated alias the API server still fills in.
  const sa = spec['serviceAccountName'] ?? spec['serviceAccount'];
  return {
    name,
    namespace,
    labels: stringMap(metadata['labels'], 'metadata.labels'),
    annotations: stringMap(metadata['annotations'], 'metadata.annotations'),
    hasLabels: isJsonObject(metadata['labels']),
    hasAnnotations: isJsonObject(metadata['annotations']),
    hostNetwork: spec['hostNetwork'] === true,
    serviceAccountName: typeof sa === 'string' && sa !== '' ? sa : 'default',
    containers,
    initContainerNames: initContainers.map((c, i) => named(c, `spec.initContainers[${i}]`)),
    hasInitContainers: Array.isArray(spec['initContainers']),
    hasVolumes: Array.isArray(spec['volumes']),
    volumeNames: volumes.map((v, i) => named(v, `spec.volumes[${i}]`)),
  };
}
