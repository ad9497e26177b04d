import { readFile } from 'node:fs/promises';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import { type Resource, TypeUrl } from '../../pkg/envoy/types.js';
import { type Identity, proxyCommonName, spiffeId } from '../../pkg/mesh/identity.js';
import { type ProxyResources, referencesOf } from './envoy/crossref.js';
import type { EncodedResource } from './envoy-validate.js';
import { RawAdsClient, type ReceivedResponse } from './xds/test-client.js';

/** mTLS channel credentials for a proxy, issued by the controller's CA in `<state>/ca`. */
export async function proxyCredentials(
  stateDir: string,
  proxy: Identity & { uuid: string; kind?: 'sidecar' | 'grpc' },
  trustDomain = 'cluster.local',
): Promise<{ credentials: grpc.ChannelCredentials; cn: string }> {
  const ca = await BuiltinCA.loadOrCreate(path.join(stateDir, 'ca'));
  const cn = proxyCommonName({ kind: 'sidecar', ...proxy, trustDomain });
  const cert = await ca.issue({
    commonName: cn,
    uriSans: [spiffeId(proxy, trustDomain)],
    validityMs: 3_600_000,
    usage: 'client',
  });
  const root = await readFile(path.join(stateDir, 'ca', 'ca.crt'));
  return {
    credentials: grpc.credentials.createSsl(root, Buffer.from(cert.keyPem), Buffer.from(cert.certPem)),
    cn,
  };
}

export function adsClient(port: number, credentials: grpc.ChannelCredentials): RawAdsClient {
  return new RawAdsClient({ address: `localhost:${port}`, credentials });
}

function toResources(r: ReceivedResponse): Resource[] {
  return r.messages.map((message, i) => ({
    name: r.names[i] ?? '',
    typeUrl: r.typeUrl as TypeUrl,
    message,
  }));
}

/** What fetchLikeEnvoy returns: the decoded resources, plus every one of them exactly as received. */
export interface EnvoyLikeResources extends ProxyResources {
  /** The raw Any values of the latest response of each type (for validateWithEnvoy). */
  encoded: EncodedResource[];
  /** The latest response of each type as received (version, nonce, names, Any values), by type URL. */
  responses: Map<string, ReceivedResponse>;
  /**
   * What the client holds, by type URL then name, as received: the latest
   * response of a type may carry only what changed (RDS, EDS, SDS).
   */
  held: Map<string, Map<string, EncodedResource>>;
}

function toEncoded(r: ReceivedResponse): EncodedResource[] {
  return r.resources.map((a) => ({ typeUrl: a.typeUrl, bytes: a.value }));
}

/**
 * What the client holds of a type after a response: LDS and CDS responses are
 * the full set; RDS, EDS and SDS ones may carry only what changed (xDS
 * "Grouping Resources into Responses"), so they add to or replace what is
 * held, as Envoy does, kept to the subscribed names.
 */
function held<T>(
  typeUrl: string,
  before: Map<string, T> | undefined,
  incoming: readonly [string, T][],
  subscribed: readonly string[] | undefined,
): Map<string, T> {
  if (typeUrl === TypeUrl.Listener || typeUrl === TypeUrl.Cluster || before === undefined)
    return new Map(incoming);
  const keep = new Set(subscribed ?? []);
  const out = new Map([...before].filter(([n]) => keep.has(n)));
  for (const [n, v] of incoming) out.set(n, v);
  return out;
}

/**
 * Subscribes the way Envoy does — LDS and CDS as wildcards, then RDS, EDS and
 * SDS by the names those reference — ACKing every response, and returns the
 * latest resources of each type.
 */
export async function fetchLikeEnvoy(client: RawAdsClient, nodeId: string): Promise<EnvoyLikeResources> {
  const latest = new Map<string, Map<string, Resource>>();
  const latestEncoded = new Map<string, Map<string, EncodedResource>>();
  const responses = new Map<string, ReceivedResponse>();
  const node = { id: nodeId, cluster: 'skein-test' };
  client.send({ typeUrl: TypeUrl.Cluster, node });
  client.send({ typeUrl: TypeUrl.Listener });
  const subscribed = new Map<string, string[]>();
  const want = (typeUrl: string, names: string[]) => {
    const sorted = [...names].sort();
    if (JSON.stringify(subscribed.get(typeUrl)) === JSON.stringify(sorted)) return;
    subscribed.set(typeUrl, sorted);
    client.send({ typeUrl, resourceNames: sorted });
  };
  const deadline = Date.now() + 10_000;
  // Responses drained at the end go through the loop too: one may be a push
  // (the mesh changed) that references new names to subscribe to.
  const pending: ReceivedResponse[] = [];
  for (;;) {
    let res: ReceivedResponse;
    try {
      res = pending.shift() ?? (await client.next(Math.max(1, deadline - Date.now())));
    } catch {
      break; // quiet: everything requested has arrived
    }
    const names = subscribed.get(res.typeUrl);
    const resources = toResources(res);
    latest.set(
      res.typeUrl,
      held(
        res.typeUrl,
        latest.get(res.typeUrl),
        resources.map((r) => [r.name, r]),
        names,
      ),
    );
    latestEncoded.set(
      res.typeUrl,
      held(
        res.typeUrl,
        latestEncoded.get(res.typeUrl),
        toEncoded(res).map((e, i) => [resources[i]?.name ?? '', e]),
        names,
      ),
    );
    responses.set(res.typeUrl, res);
    client.ack(res, names ?? []);
    const all = [...latest.values()].flatMap((m) => [...m.values()]);
    const refs = referencesOf(all);
    if (latest.has(TypeUrl.Listener)) want(TypeUrl.RouteConfiguration, [...refs.routes]);
    if (latest.has(TypeUrl.Cluster)) want(TypeUrl.ClusterLoadAssignment, [...refs.edsClusters]);
    if (latest.has(TypeUrl.Cluster) && latest.has(TypeUrl.Listener)) want(TypeUrl.Secret, [...refs.secrets]);
    // An empty RDS/EDS/SDS subscription gets no response (it unsubscribes).
    const expected = [...subscribed].filter(([, names]) => names.length > 0).map(([t]) => t);
    const complete = [...expected, TypeUrl.Cluster, TypeUrl.Listener].every((t) => latest.has(t));
    if (complete && subscribed.size === 3 && pending.length === 0) {
      // Wait briefly for anything still in flight, then stop.
      const more = await client.drain(300);
      if (more.length === 0) break;
      pending.push(...more);
    }
  }
  // In name order, as a generator emits them and a config dump shows them; a
  // partial response's new names arrive after the ones already held.
  const byName = <T>(m: Map<string, T> | undefined): Map<string, T> =>
    new Map([...(m ?? new Map<string, T>()).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const of = (typeUrl: string) => [...byName(latest.get(typeUrl)).values()];
  const holding = new Map([...latestEncoded].map(([typeUrl, m]) => [typeUrl, byName(m)]));
  return {
    listeners: of(TypeUrl.Listener),
    routes: of(TypeUrl.RouteConfiguration),
    clusters: of(TypeUrl.Cluster),
    endpoints: of(TypeUrl.ClusterLoadAssignment),
    secrets: of(TypeUrl.Secret),
    encoded: [...holding.values()].flatMap((m) => [...m.values()]),
    responses,
    held: holding,
  };
}
