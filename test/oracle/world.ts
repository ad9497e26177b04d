// The oracle's model of a mesh and its random changes. The universe is small
// on purpose (three namespaces, a few names of each kind) so that random
// changes collide: the same object is added, edited, broken and deleted many
// times, services select pods that come and go, policies name identities that
// exist only some of the time.
import { LABEL_MONITORED_BY, LABEL_PROXY_UUID } from '../../pkg/mesh/constants.js';
import type { Prng } from '../support/prng.js';

export type Json = string | number | boolean | null | Json[] | { [k: string]: Json };

export interface KubeObj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: { [k: string]: Json };
  status?: { [k: string]: Json };
}

export function keyOf(o: KubeObj): string {
  return `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

export type Step =
  /** `invalid`: why skein must refuse this version (its last valid version stays in force). */
  | { op: 'apply'; obj: KubeObj; invalid?: string }
  /** Local mode only: the object's file becomes unparseable YAML. */
  | { op: 'break'; obj: KubeObj }
  | { op: 'delete'; obj: KubeObj }
  /** Several changes with no pause: they land inside one push window. */
  | { op: 'burst'; steps: Step[] }
  | { op: 'restart' }
  | { op: 'pause'; ms: number };

export interface Universe {
  meshName: string;
  /** The mesh's namespaces (each may leave and re-join the mesh). */
  namespaces: readonly string[];
  controlPlane: string;
  /** Local manifests can carry what the API server would refuse (ports out of range, broken YAML). */
  local: boolean;
}

export const SERVICE_ACCOUNTS = ['web', 'api', 'client'] as const;
/** Pod name → its service account; a pod keeps its identity (and proxy UUID) across edits. */
export const PODS: Readonly<Record<string, string>> = {
  'web-1': 'web',
  'web-2': 'web',
  'api-1': 'api',
  'client-1': 'client',
};
const SERVICES = ['web', 'api', 'web-v2'] as const;

/** The proxy UUID of a pod, fixed by its namespace and name so connected clients keep matching it. */
export function podUuid(u: Universe, namespace: string, pod: string): string {
  const n = u.namespaces.indexOf(namespace) * 16 + Object.keys(PODS).indexOf(pod) + 1;
  return `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

/** A pod's address for an IP variant: variants move a pod between two addresses. */
export function podIp(u: Universe, namespace: string, pod: string, variant: number): string {
  return `10.244.${u.namespaces.indexOf(namespace) + 1}.${Object.keys(PODS).indexOf(pod) * 10 + variant + 10}`;
}

const PORTS: Record<string, Json> = {
  http: { name: 'http', port: 80, targetPort: 'http', appProtocol: 'http' },
  grpc: { name: 'grpc', port: 14001, targetPort: 'grpc', appProtocol: 'grpc' },
  tcp: { name: 'tcp', port: 5432, targetPort: 5432, appProtocol: 'tcp' },
};
const CONTAINER_PORTS: Record<string, Json> = {
  http: { name: 'http', containerPort: 8080 },
  grpc: { name: 'grpc', containerPort: 14001 },
  tcp: { name: 'tcp', containerPort: 5432 },
};
const MATCHES: Json[] = [
  { name: 'all', pathRegex: '.*', methods: ['*'] },
  { name: 'get', pathRegex: '/books/.*', methods: ['GET'] },
  { name: 'gold', headers: { 'x-tenant': 'gold' } },
];

function nonEmpty<T>(r: Prng, items: readonly T[]): T[] {
  const s = r.subset(items);
  return s.length > 0 ? s : [r.pick(items)];
}

export function namespaceObj(u: Universe, name: string, inMesh: boolean): KubeObj {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: inMesh ? { [LABEL_MONITORED_BY]: u.meshName } : {} },
  };
}

function serviceAccount(namespace: string, name: string): KubeObj {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } };
}

function service(r: Prng, namespace: string, name: string): KubeObj {
  const selector: Record<string, Json> = { app: r.pick(['web', 'api']) };
  if (name === 'web-v2' || r.chance(0.2)) selector['version'] = r.pick(['v1', 'v2']);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { selector, ports: nonEmpty(r, Object.keys(PORTS)).map((p) => PORTS[p] ?? null) },
  };
}

function pod(u: Universe, r: Prng, namespace: string, name: string): KubeObj {
  const ip = podIp(u, namespace, name, r.between(0, 1));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: {
        app: r.chance(0.8) ? (name.split('-')[0] ?? name) : r.pick(['web', 'api']),
        version: r.pick(['v1', 'v2']),
        [LABEL_PROXY_UUID]: podUuid(u, namespace, name),
      },
    },
    spec: {
      serviceAccountName: PODS[name] ?? 'default',
      containers: [
        {
          name: 'app',
          image: 'example.invalid/app:oracle',
          ports: nonEmpty(r, Object.keys(CONTAINER_PORTS)).map((p) => CONTAINER_PORTS[p] ?? null),
        },
      ],
    },
    status: {
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      conditions: [{ type: 'Ready', status: r.chance(0.8) ? 'True' : 'False' }],
    },
  };
}

function trafficTarget(u: Universe, r: Prng, namespace: string, name: string): KubeObj {
  const rules: Json[] = [];
  if (r.chance(0.7))
    rules.push({ kind: 'HTTPRouteGroup', name: 'routes', matches: r.subset(['all', 'get', 'gold']) });
  if (rules.length === 0 || r.chance(0.3)) rules.push({ kind: 'TCPRoute', name: 'tcp' });
  const sources: Json[] = [];
  for (let i = r.between(1, 2); i > 0; i--)
    sources.push({ kind: 'ServiceAccount', name: r.pick(SERVICE_ACCOUNTS), namespace: r.pick(u.namespaces) });
  return {
    apiVersion: 'access.smi-spec.io/v1alpha3',
    kind: 'TrafficTarget',
    metadata: { name, namespace },
    spec: {
      destination: { kind: 'ServiceAccount', name: r.pick(SERVICE_ACCOUNTS), namespace },
      sources,
      rules,
    },
  };
}

function routeGroup(r: Prng, namespace: string): KubeObj {
  return {
    apiVersion: 'specs.smi-spec.io/v1alpha4',
    kind: 'HTTPRouteGroup',
    metadata: { name: 'routes', namespace },
    spec: { matches: nonEmpty(r, MATCHES) },
  };
}

function tcpRoute(r: Prng, namespace: string): KubeObj {
  return {
    apiVersion: 'specs.smi-spec.io/v1alpha4',
    kind: 'TCPRoute',
    metadata: { name: 'tcp', namespace },
    spec: r.chance(0.5) ? { matches: { ports: [5432] } } : {},
  };
}

function trafficSplit(r: Prng, namespace: string): KubeObj {
  const backends = nonEmpty(r, ['web-v2', 'api', 'web']).map((service) => ({
    service,
    weight: r.between(0, 100),
  }));
  const first = backends[0];
  if (first && backends.every((b) => b.weight === 0)) first.weight = 1;
  return {
    apiVersion: 'split.smi-spec.io/v1alpha4',
    kind: 'TrafficSplit',
    metadata: { name: 'split', namespace },
    spec: { service: r.pick(['web', 'api']), backends },
  };
}

function meshConfig(u: Universe, r: Prng, name: string): KubeObj {
  return {
    apiVersion: 'config.skein.dev/v1alpha1',
    kind: 'MeshConfig',
    metadata: { name, namespace: u.controlPlane },
    // Never the trust domain: a change of it applies only after a restart, by design.
    spec: {
      traffic: { permissive: r.chance(0.5) },
      certificate: { validity: r.pick(['24h', '12h']) },
    },
  };
}

/** What the oracle's mesh starts from: everything valid, every namespace in the mesh. */
export function initialObjects(u: Universe, r: Prng): KubeObj[] {
  const out: KubeObj[] = [namespaceObj(u, u.controlPlane, false), meshConfig(u, r, u.meshName)];
  for (const ns of u.namespaces) {
    out.push(namespaceObj(u, ns, true));
    for (const sa of SERVICE_ACCOUNTS) out.push(serviceAccount(ns, sa));
    for (const s of SERVICES) out.push(service(r, ns, s));
    for (const p of Object.keys(PODS)) out.push(pod(u, r, ns, p));
    out.push(routeGroup(r, ns), tcpRoute(r, ns), trafficTarget(u, r, ns, 'tt-1'), trafficSplit(r, ns));
  }
  return out;
}

/** A valid version of a random object of `kind`, plus an invalid variant of it when the kind has one. */
function randomObject(
  u: Universe,
  r: Prng,
  kind: string,
): { obj: KubeObj; invalid?: () => [KubeObj, string] } {
  const ns = r.pick(u.namespaces);
  const clone = (o: KubeObj): KubeObj => structuredClone(o);
  switch (kind) {
    case 'Namespace': {
      const obj = namespaceObj(u, ns, r.chance(0.75));
      return { obj };
    }
    case 'ServiceAccount':
      return { obj: serviceAccount(ns, r.pick(SERVICE_ACCOUNTS)) };
    case 'Service': {
      const obj = service(r, ns, r.pick(SERVICES));
      return {
        obj,
        invalid: () => {
          const bad = clone(obj);
          if (bad.spec) bad.spec['ports'] = [PORTS['http'] ?? null, PORTS['http'] ?? null];
          return [bad, 'a port used twice'];
        },
      };
    }
    case 'Pod': {
      const obj = pod(u, r, ns, r.pick(Object.keys(PODS)));
      return {
        obj,
        invalid: () => {
          const bad = clone(obj);
          bad.spec = {
            ...bad.spec,
            containers: [{ name: 'app', image: 'x', ports: [{ containerPort: 70000 }] }],
          };
          return [bad, 'containerPort out of range'];
        },
      };
    }
    case 'TrafficTarget': {
      const obj = trafficTarget(u, r, ns, r.pick(['tt-1', 'tt-2']));
      return {
        obj,
        invalid: () => {
          const bad = clone(obj);
          const other = u.namespaces.find((n) => n !== ns) ?? ns;
          if (bad.spec) bad.spec['destination'] = { kind: 'ServiceAccount', name: 'web', namespace: other };
          return [bad, 'destination in another namespace'];
        },
      };
    }
    case 'HTTPRouteGroup': {
      const obj = routeGroup(r, ns);
      return {
        obj,
        invalid: () => {
          const bad = clone(obj);
          if (bad.spec) bad.spec['matches'] = [{ name: 'all', pathRegex: '(?=x).*' }];
          return [bad, 'lookaround regex'];
        },
      };
    }
    case 'TCPRoute':
      return { obj: tcpRoute(r, ns) };
    case 'TrafficSplit': {
      const obj = trafficSplit(r, ns);
      return {
        obj,
        invalid: () => {
          const bad = clone(obj);
          if (bad.spec) bad.spec['backends'] = [{ service: 'web-v2', weight: 0 }];
          return [bad, 'all weights 0'];
        },
      };
    }
    default: {
      // Mostly the mesh's own MeshConfig; sometimes a second one, which selection must ignore.
      const obj = meshConfig(u, r, r.chance(0.85) ? u.meshName : 'other');
      return {
        obj,
        invalid: () => {
          const bad = clone(obj);
          if (bad.spec) bad.spec['certificate'] = { validity: '0s' };
          return [bad, 'zero certificate validity'];
        },
      };
    }
  }
}

const KINDS = [
  'Namespace',
  'ServiceAccount',
  'Service',
  'Service',
  'Pod',
  'Pod',
  'Pod',
  'TrafficTarget',
  'TrafficTarget',
  'HTTPRouteGroup',
  'TCPRoute',
  'TrafficSplit',
  'TrafficSplit',
  'MeshConfig',
];

/** One random change to a single object (never a restart, burst or pause). */
export function randomChange(u: Universe, r: Prng): Step {
  const kind = r.pick(KINDS);
  const { obj, invalid } = randomObject(u, r, kind);
  const roll = r.next();
  // Namespaces stay: deleting one in Kubernetes takes the namespace controller's time.
  if (roll < 0.15 && kind !== 'Namespace') return { op: 'delete', obj };
  if (roll < 0.3 && invalid) {
    const [bad, why] = invalid();
    return { op: 'apply', obj: bad, invalid: why };
  }
  if (roll < 0.35 && u.local && kind !== 'Namespace') return { op: 'break', obj };
  return { op: 'apply', obj };
}

/**
 * The whole random sequence: single changes with short pauses (some inside a
 * push window, some longer), bursts of 2–6 changes, and controller restarts
 * (one in the middle always, more at random).
 */
export function randomSteps(u: Universe, r: Prng, count: number): Step[] {
  const steps: Step[] = [];
  const middle = Math.floor(count / 2);
  for (let i = 0; i < count; i++) {
    if (i === middle || r.chance(0.01)) steps.push({ op: 'restart' });
    else if (r.chance(0.15)) {
      const burst: Step[] = [];
      for (let n = r.between(2, 6); n > 0; n--) burst.push(randomChange(u, r));
      steps.push({ op: 'burst', steps: burst });
    } else steps.push(randomChange(u, r));
    steps.push({ op: 'pause', ms: r.chance(0.7) ? r.between(0, 40) : r.between(60, 250) });
  }
  return steps;
}

export function describeStep(s: Step): string {
  switch (s.op) {
    case 'apply':
      return `apply ${keyOf(s.obj)}${s.invalid ? ` (invalid: ${s.invalid})` : ''} ${JSON.stringify(s.obj.spec ?? s.obj.metadata.labels ?? {})}`;
    case 'break':
      return `break YAML of ${keyOf(s.obj)}`;
    case 'delete':
      return `delete ${keyOf(s.obj)}`;
    case 'burst':
      return `burst [${s.steps.map(describeStep).join('; ')}]`;
    case 'restart':
      return 'restart the controller';
    case 'pause':
      return `pause ${s.ms} ms`;
  }
}

/**
 * What must be in force after the steps that were carried out: each object's
 * last valid version, and which objects currently read as invalid (the repair
 * step puts their last valid version back, or deletes those that never had one).
 */
export class WorldState {
  readonly valid = new Map<string, KubeObj>();
  readonly invalid = new Map<string, KubeObj>();
  /** Every pod's last valid version, kept after the pod is deleted. */
  private readonly lastPods = new Map<string, KubeObj>();

  constructor(initial: readonly KubeObj[]) {
    for (const o of initial) this.valid.set(keyOf(o), o);
    for (const o of initial) if (o.kind === 'Pod') this.lastPods.set(keyOf(o), o);
  }

  /** Records a carried-out change (`accepted`: the API server took it; local writes always are). */
  record(s: Step, accepted: boolean): void {
    if (!accepted) return;
    const key = s.op === 'apply' || s.op === 'break' || s.op === 'delete' ? keyOf(s.obj) : '';
    if (s.op === 'apply' && !s.invalid) {
      this.valid.set(key, s.obj);
      this.invalid.delete(key);
      if (s.obj.kind === 'Pod') this.lastPods.set(key, s.obj);
    } else if (s.op === 'apply' || s.op === 'break') {
      this.invalid.set(key, s.obj);
    } else if (s.op === 'delete') {
      this.valid.delete(key);
      this.invalid.delete(key);
    }
  }

  /**
   * The changes that leave every object valid, and every pod back. A connected
   * proxy whose pod is gone keeps the pod it had until it reconnects (the
   * controller's contextOf), which a fresh controller cannot know; so each
   * client's pod ends present, in its last valid version, and the comparison
   * stays exact. Deletions along the way still exercise the rule.
   */
  repair(): Step[] {
    const steps = [...this.invalid].map(([key, obj]): Step => {
      const good = this.valid.get(key) ?? this.lastPods.get(key);
      return good ? { op: 'apply', obj: good } : { op: 'delete', obj };
    });
    for (const [key, pod] of this.lastPods)
      if (!this.valid.has(key) && !this.invalid.has(key)) steps.push({ op: 'apply', obj: pod });
    return steps;
  }
}
