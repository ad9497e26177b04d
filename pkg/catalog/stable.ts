// Structural sharing between successive MeshViews: an answer equal to the one
// an earlier view gave for the same question is handed out as that very
// object, so everything downstream (generator memos, the encoded-resource
// interner) can tell "unchanged" by identity instead of by content.
import type { Identity } from '../mesh/identity.js';
import type { EgressPolicy } from './egress.js';
import type { GatewayPlan } from './gateway.js';
import type { IngressCompilation, IngressPort } from './ingress.js';
import type { RetryRule } from './retry.js';
import type { Endpoint, InboundRule, MeshService, SplitBackend } from './types.js';
import type { UpstreamSetting } from './upstream.js';

/** Per key, the value last handed out; an equal fresh value is replaced by it. */
export class StablePool<V> {
  private readonly values = new Map<string, V>();

  constructor(private readonly equal: (a: V, b: V) => boolean) {}

  /**
   * `fresh`, or the value last recorded under `key` when equal to it. Only the
   * newest view of a lineage records (`record`), so a late question to an older
   * view cannot replace a newer answer.
   */
  settle(key: string, fresh: V, record: boolean): V {
    const known = this.values.get(key);
    if (known !== undefined && (known === fresh || this.equal(known, fresh))) return known;
    if (record) this.values.set(key, fresh);
    return fresh;
  }

  /** Forgets keys whose subject no longer exists, so memory follows the mesh, not its history. */
  sweep(live: (key: string) => boolean): void {
    for (const key of this.values.keys()) if (!live(key)) this.values.delete(key);
  }

  get size(): number {
    return this.values.size;
  }
}

function sameList<T>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined || y === undefined || !same(x, y)) return false;
  }
  return true;
}

const identical = <T>(x: T, y: T): boolean => x === y;

/** Routes name services by object: settled services make identity the right comparison. */
function sameGatewayPlan(a: GatewayPlan, b: GatewayPlan): boolean {
  return (
    sameJson(a.tls, b.tls) &&
    sameJson(a.ingresses, b.ingresses) &&
    sameList(
      a.hosts,
      b.hosts,
      (x, y) =>
        x.host === y.host &&
        x.tlsSecret === y.tlsSecret &&
        sameList(
          x.routes,
          y.routes,
          (r, q) =>
            r.service === q.service && r.port === q.port && r.origin === q.origin && sameJson(r.path, q.path),
        ),
    )
  );
}
// Plain data built by the view itself (no cycles, fixed key order), so JSON is a faithful comparison.
const sameJson = (x: unknown, y: unknown): boolean => JSON.stringify(x) === JSON.stringify(y);

/**
 * The pools one chain of views (each built with `previous` = the one before)
 * shares. Lists of services compare their elements by identity: services are
 * settled first, so an equal service is already the same object.
 */
export class ViewLineage {
  /** The newest view of the lineage; only it records new answers. */
  head: object | undefined;
  /** The last Egress compilation, reused while its inputs are the same objects (catalog/egress.ts). */
  egress: EgressPolicy | undefined;
  /** The last ingress compilation, reused while what it read is the same (catalog/view.ts). */
  ingressCompiled: IngressCompilation | undefined;
  readonly services = new StablePool<MeshService>(sameJson);
  readonly serviceList = new StablePool<readonly MeshService[]>((a, b) => sameList(a, b, identical));
  readonly endpoints = new StablePool<readonly Endpoint[]>((a, b) =>
    sameList(
      a,
      b,
      (x, y) => x.ip === y.ip && x.port === y.port && x.ready === y.ready && x.podName === y.podName,
    ),
  );
  readonly identities = new StablePool<readonly Identity[]>((a, b) =>
    sameList(a, b, (x, y) => x.namespace === y.namespace && x.serviceAccount === y.serviceAccount),
  );
  readonly inbound = new StablePool<readonly InboundRule[]>(sameJson);
  /** Ingress answers by `<ns>/<svc>|<targetPort>` (catalog/ingress.ts). */
  readonly ingress = new StablePool<IngressPort>(sameJson);
  /** The ingress gateway's plan (catalog/gateway.ts), one key. */
  readonly gateway = new StablePool<GatewayPlan>(sameGatewayPlan);
  readonly outbound = new StablePool<readonly MeshService[]>((a, b) => sameList(a, b, identical));
  readonly splits = new StablePool<readonly SplitBackend[]>((a, b) =>
    sameList(a, b, (x, y) => x.service === y.service && x.weight === y.weight),
  );
  /** Retry rules by `<source ns>/<sa>|<dest ns>/<svc>` (catalog/retry.ts); swept by the view. */
  readonly retryRules = new StablePool<RetryRule>(sameJson);
  /** A source's rules by destination: rules are settled first, so identity compares them. */
  readonly retryTables = new StablePool<ReadonlyMap<string, RetryRule>>(
    (a, b) => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v),
  );
  /** UpstreamTrafficSettings by service key (catalog/upstream.ts). */
  readonly upstream = new StablePool<UpstreamSetting>(sameJson);
  /** All of them, one key: settled settings make identity the right comparison. */
  readonly upstreamTable = new StablePool<ReadonlyMap<string, UpstreamSetting>>(
    (a, b) => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v),
  );

  /**
   * Drops answers about services and source identities that are gone. Keys
   * are `<ns>/<svc>`, `<ns>/<svc>|<port>` (services) or `<ns>/<sa>` (identities).
   */
  sweep(serviceExists: (key: string) => boolean, sourceExists: (key: string) => boolean): void {
    const byService = (key: string): boolean => {
      const bar = key.indexOf('|');
      return serviceExists(bar < 0 ? key : key.slice(0, bar));
    };
    for (const pool of [this.services, this.endpoints, this.identities, this.inbound, this.splits]) {
      pool.sweep(byService);
    }
    this.ingress.sweep(byService);
    this.upstream.sweep(byService);
    this.outbound.sweep(sourceExists);
  }
}
