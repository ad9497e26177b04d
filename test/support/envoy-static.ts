// What skein's generators produce for one sidecar, as a bootstrap the real
// Envoy runs without a control plane (test/support/envoy-bin.ts runs it): the
// resources are turned into static configuration (RDS inlined, EDS clusters
// made STATIC, SDS secrets static), optionally moved onto loopback ports,
// since there is no iptables redirect here and the destination a chain
// matches is the port a test connects to; and the certificates they need.

import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import type { IssuedCertificate, SecretSource } from '../../pkg/certificate/types.js';
import { DiscoveryType } from '../../pkg/envoy/common/enums.js';
import type { ProtoObject, ProtoValue } from '../../pkg/envoy/types.js';
import { BOOTSTRAP_TYPE_URL } from '../../pkg/injector/bootstrap.js';
import { type Identity, serviceIdentityName, spiffeId } from '../../pkg/mesh/identity.js';
import type { ProxyResources } from './envoy/crossref.js';
import { isProtoObject, plain } from './envoy/pick.js';
import { encodeParsed, parsedProto3Json } from './envoy/proto-types.js';

/** A fresh CA and a workload certificate (as the manager issues them) per identity key. */
export interface IssuedMesh {
  ca: BuiltinCA;
  secrets: SecretSource;
  cert(identityKey: string): IssuedCertificate;
}

export async function issueMeshCertificates(
  keys: readonly string[],
  trustDomain: string,
): Promise<IssuedMesh> {
  const ca = await BuiltinCA.create({ commonName: 'skein test root' });
  const certs = new Map<string, IssuedCertificate>();
  for (const key of keys) {
    const [namespace = '', serviceAccount = ''] = key.split('/');
    const id: Identity = { namespace, serviceAccount };
    const request = { commonName: serviceIdentityName(id, trustDomain), validityMs: 3_600_000 };
    certs.set(key, await ca.issue({ ...request, uriSans: [spiffeId(id, trustDomain)], usage: 'both' }));
  }
  const cert = (key: string): IssuedCertificate => {
    const found = certs.get(key);
    if (!found) throw new Error(`no certificate issued for ${key}`);
    return found;
  };
  return {
    ca,
    secrets: { trustBundlePem: ca.trustBundlePem, serviceCertificate: (key) => certs.get(key) },
    cert,
  };
}

export interface ListenerPlacement {
  /** The generated listener. */
  listener: string;
  /** Loopback port it listens on instead of its own address. */
  port: number;
  /** Loopback address; default 127.0.0.1. */
  address?: string;
  /** Name of this copy (one listener may be placed on several ports). */
  name?: string;
}

export interface StaticOptions {
  adminPort: number;
  /** Listeners to run, where; every listener at its own address when absent (validate mode). */
  listeners?: readonly ListenerPlacement[];
  /** Destination port a chain or listener filter matches → the loopback port tests connect to. */
  destinationPorts?: ReadonlyMap<number, number>;
  /** Destination IP a chain matches (a clusterIP) → the loopback address tests connect to. */
  destinationIps?: ReadonlyMap<string, string>;
  /** Cluster name → loopback port of its only endpoint; other clusters keep theirs. */
  endpoints?: ReadonlyMap<string, number>;
}

/** A copy of `v` with `fix` applied to every object in it, children first. */
function rewrite(v: ProtoValue, fix: (o: ProtoObject) => ProtoObject): ProtoValue {
  if (Array.isArray(v)) return v.map((item) => rewrite(item, fix));
  if (!isProtoObject(v)) return v;
  const out: ProtoObject = {};
  for (const [k, child] of Object.entries(v)) out[k] = rewrite(child, fix);
  return fix(out);
}

function loopback(port: number, address = '127.0.0.1'): ProtoObject {
  return { socket_address: { address, port_value: port } };
}

function loadAssignment(cluster: string, endpoints: readonly ProtoValue[]): ProtoObject {
  return { cluster_name: cluster, endpoints: [...endpoints] };
}

/** The bootstrap (fromObject form) that runs these resources as static configuration. */
export function staticBootstrap(res: ProxyResources, opts: StaticOptions): ProtoObject {
  const routes = new Map(res.routes.map((r) => [r.name, r.message]));
  const endpointsOf = new Map(res.endpoints.map((r) => [r.name, plain(r.message)['endpoints'] ?? []]));
  const ports = opts.destinationPorts ?? new Map<number, number>();
  const moved = (p: ProtoValue | undefined) => (typeof p === 'number' ? (ports.get(p) ?? p) : p);
  const fix = (o: ProtoObject): ProtoObject => {
    const rds = o['rds'];
    if (isProtoObject(rds) && typeof rds['route_config_name'] === 'string') {
      const { rds: _dropped, ...rest } = o;
      const config = routes.get(rds['route_config_name']);
      if (!config) throw new Error(`route config ${rds['route_config_name']} was not generated`);
      return { ...rest, route_config: config };
    }
    // A secret config with only a name refers to a static secret.
    if (typeof o['name'] === 'string' && 'sds_config' in o) return { name: o['name'] };
    const dp = o['destination_port'];
    if (isProtoObject(dp)) return { ...o, destination_port: { value: moved(dp['value']) ?? 0 } };
    const prefix = o['address_prefix'];
    if (typeof prefix === 'string' && 'prefix_len' in o) {
      return { ...o, address_prefix: opts.destinationIps?.get(prefix) ?? prefix };
    }
    const range = o['destination_port_range'];
    if (isProtoObject(range) && typeof range['start'] === 'number') {
      const start = moved(range['start']) ?? 0;
      return { ...o, destination_port_range: { start, end: typeof start === 'number' ? start + 1 : 0 } };
    }
    return o;
  };
  const listeners: ProtoValue[] = [];
  const placements: readonly ListenerPlacement[] =
    opts.listeners ?? res.listeners.map((l) => ({ listener: l.name, port: 0 }));
  for (const p of placements) {
    const source = res.listeners.find((l) => l.name === p.listener);
    if (!source) throw new Error(`no listener ${p.listener}`);
    const copy = rewrite(source.message, fix);
    if (!isProtoObject(copy)) throw new Error('listener is not an object');
    if (opts.listeners) copy['address'] = loopback(p.port, p.address);
    copy['name'] = p.name ?? p.listener;
    listeners.push(copy);
  }
  const clusters = res.clusters.map((c) => {
    const copy = rewrite(c.message, fix);
    if (!isProtoObject(copy)) throw new Error('cluster is not an object');
    const port = opts.endpoints?.get(c.name);
    const own =
      port === undefined ? undefined : [{ lb_endpoints: [{ endpoint: { address: loopback(port) } }] }];
    if (copy['type'] === DiscoveryType.EDS) {
      const { eds_cluster_config: _dropped, ...rest } = copy;
      return {
        ...rest,
        type: DiscoveryType.STATIC,
        load_assignment: loadAssignment(c.name, own ?? list(endpointsOf.get(c.name))),
      };
    }
    if (own) copy['load_assignment'] = loadAssignment(c.name, own);
    return copy;
  });
  return {
    admin: { address: loopback(opts.adminPort) },
    static_resources: {
      listeners,
      clusters,
      secrets: res.secrets.map((s) => s.message),
    },
  };
}

function list(v: ProtoValue | undefined): ProtoValue[] {
  return Array.isArray(v) ? v : [];
}

/** The bootstrap as the proto3 JSON Envoy reads from `-c`. */
export function bootstrapJson(bootstrap: ProtoObject): string {
  return JSON.stringify(parsedProto3Json(BOOTSTRAP_TYPE_URL, encodeParsed(BOOTSTRAP_TYPE_URL, bootstrap)));
}
