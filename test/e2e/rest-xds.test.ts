// REST xDS against a real controller (local mode, its own process): the HTTPS
// port authenticates with client certificates from the controller's CA and
// serves a node exactly what ADS over mTLS streams to it; the HTTP port takes
// node.id as the identity (local mode only).
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { anyJson } from '../../pkg/xds/rest/proto-json.js';
import { type ClientCert, type HttpsReply, postHttps } from '../support/https.js';
import { LocalMesh } from '../support/local-mesh.js';
import { RawAdsClient, type ReceivedResponse } from '../support/xds/test-client.js';

const BUYER = '00000000-0000-4000-8000-000000000011.sidecar.bookbuyer.bookbuyer.cluster.local';
const THIEF = '00000000-0000-4000-8000-000000000012.sidecar.bookthief.bookthief.cluster.local';

interface Json {
  version_info: string;
  type_url: string;
  resources: Record<string, unknown>[];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parse(reply: HttpsReply): Json {
  assert.equal(reply.status, 200, reply.body);
  const v: unknown = JSON.parse(reply.body);
  assert.ok(isRecord(v) && Array.isArray(v['resources']));
  return {
    version_info: String(v['version_info']),
    type_url: String(v['type_url']),
    resources: v['resources'].filter(isRecord),
  };
}

describe('REST xDS on a local-mode controller', { timeout: 60_000 }, () => {
  let mesh: LocalMesh;
  let restPort: number;
  let ca: BuiltinCA;
  const clients: RawAdsClient[] = [];

  before(async () => {
    mesh = await LocalMesh.start({ extraArgs: ['--rest-xds-port', '0'] });
    const ready = mesh.controller.lines.find((l) => l['msg'] === 'skein controller ready');
    restPort = Number(ready?.['restXds']);
    assert.ok(restPort > 0, `ready line names the REST xDS port: ${JSON.stringify(ready)}`);
    // The controller's own CA, from its state directory: certificates it trusts.
    ca = await BuiltinCA.loadOrCreate(path.join(mesh.stateDir, 'ca'));
  });
  after(async () => {
    for (const c of clients) c.close();
    await mesh?.stop();
  });

  const cert = (cn: string) => ca.issue({ commonName: cn, validityMs: 3_600_000, usage: 'client' });

  /** skein_xds_refused_total for secrets, by reason, from the controller's /metrics. */
  async function refusedSecrets(): Promise<Record<string, number>> {
    const text = await (await fetch(`http://127.0.0.1:${mesh.ports.http}/metrics`)).text();
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^skein_xds_refused_total\{([^}]*)\} (\S+)$/gm)) {
      const labels = m[1] ?? '';
      if (!labels.includes('type="Secret"')) continue;
      const reason = /reason="([^"]+)"/.exec(labels)?.[1] ?? '';
      out[reason] = (out[reason] ?? 0) + Number(m[2]);
    }
    return out;
  }

  const https = (p: string, body: string, client?: ClientCert): Promise<HttpsReply> =>
    postHttps({ port: restPort, path: p, ca: ca.trustBundlePem, body, client });

  async function ads(cn: string): Promise<RawAdsClient> {
    const c = await cert(cn);
    const client = new RawAdsClient({
      address: `127.0.0.1:${mesh.ports.ads}`,
      credentials: grpc.credentials.createSsl(
        Buffer.from(ca.trustBundlePem),
        Buffer.from(c.keyPem),
        Buffer.from(c.certPem),
      ),
      channelOptions: { 'grpc.ssl_target_name_override': 'localhost' },
    });
    clients.push(client);
    return client;
  }

  test('the HTTPS port refuses a caller without a client certificate', async () => {
    const reply = await https('/v3/discovery:clusters', JSON.stringify({ node: { id: BUYER } }));
    assert.equal(reply.status, 401);
    assert.match(reply.body, /client certificate issued by the mesh CA is required/);
  });

  test("node A's certificate asking for node B is refused with 403", async () => {
    const reply = await https(
      '/v3/discovery:clusters',
      JSON.stringify({ node: { id: THIEF } }),
      await cert(BUYER),
    );
    assert.equal(reply.status, 403);
    assert.match(reply.body, /is not the client certificate's CN/);
  });

  test('node A gets exactly what ADS over mTLS streams to A, and only its own keys', async () => {
    const buyer = await cert(BUYER);
    const stream = await ads(BUYER);
    const viaAds = async (typeUrl: string, resourceNames: string[] = []): Promise<ReceivedResponse> => {
      stream.send({ typeUrl, resourceNames, node: { id: BUYER, cluster: 'bookbuyer' } });
      const r = await stream.next(5000);
      assert.equal(r.typeUrl, typeUrl);
      return r;
    };
    const viaRest = async (endpoint: string, names: string[] = []) =>
      parse(
        await https(
          `/v3/discovery:${endpoint}`,
          JSON.stringify({ node: { id: BUYER }, resource_names: names }),
          buyer,
        ),
      );
    const same = (r: ReceivedResponse, json: Json) => {
      assert.equal(json.version_info, r.versionInfo, `${r.typeUrl}: same content version`);
      assert.deepEqual(
        json.resources,
        r.resources.map((x) => anyJson(x.typeUrl, x.value)),
      );
    };

    const cds = await viaAds(TypeUrl.Cluster);
    assert.ok(cds.resources.length > 0);
    same(cds, await viaRest('clusters'));
    same(await viaAds(TypeUrl.Listener), await viaRest('listeners'));
    const edsNames = cds.names.filter((n) => n.includes('/'));
    same(await viaAds(TypeUrl.ClusterLoadAssignment, edsNames), await viaRest('endpoints', edsNames));

    const sds = await viaRest('secrets');
    const keyed = sds.resources.filter((r) => r['tls_certificate'] !== undefined).map((r) => r['name']);
    assert.deepEqual(keyed, ['service-cert:self'], 'the only private key is the caller’s');
    const refusedBefore = await refusedSecrets();
    const stolen = await viaRest('secrets', ['service-cert:bookthief/bookthief', 'skein-ca']);
    assert.deepEqual(stolen.resources, []);
    // Both asks are counted on the controller's /metrics, by reason.
    const refusedAfter = await refusedSecrets();
    assert.equal((refusedAfter['other-identity'] ?? 0) - (refusedBefore['other-identity'] ?? 0), 1);
    assert.equal((refusedAfter['unknown-name'] ?? 0) - (refusedBefore['unknown-name'] ?? 0), 1);

    // Polling with the version held: 304, as Envoy's REST subscription expects.
    const held = await https(
      '/v3/discovery:clusters',
      JSON.stringify({ node: { id: BUYER }, version_info: cds.versionInfo }),
      buyer,
    );
    assert.equal(held.status, 304);
  });

  test('local mode: the HTTP port serves REST xDS with node.id as the identity', async () => {
    const res = await fetch(`http://127.0.0.1:${mesh.ports.http}/v3/discovery:clusters`, {
      method: 'POST',
      body: JSON.stringify({ node: { id: BUYER } }),
    });
    const json = parse({ status: res.status, body: await res.text() });
    const mtls = parse(
      await https('/v3/discovery:clusters', JSON.stringify({ node: { id: BUYER } }), await cert(BUYER)),
    );
    assert.equal(json.version_info, mtls.version_info);
    const bad = await fetch(`http://127.0.0.1:${mesh.ports.http}/v3/discovery:routes`, {
      method: 'POST',
      body: '{',
    });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /body is not JSON/);
  });
});
