// REST xDS over HTTPS with client certificates from a real BuiltinCA, next to
// an ADS server over the same source and cache: a proxy fetches exactly what
// ADS streams to it (same version, same resources), never another node's.
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { bookstoreMesh, proxyFor } from '../../../test/support/envoy/mesh.js';
import type { ReceivedResponse } from '../../../test/support/xds/test-client.js';
import { type Fixture, MeshSource, startFixture, TRUST_DOMAIN } from '../../../test/support/xds/testing.js';
import type { BuiltinCA } from '../../certificate/builtin.js';
import { type ProtoObject, type ProtoValue, TypeUrl } from '../../envoy/types.js';
import { silentLogger } from '../../logger/logger.js';
import { RestXds, refusePlainRestXds } from './handler.js';
import { anyJson } from './proto-json.js';
import { RestXdsServer } from './server.js';

interface Reply {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

interface ClientCert {
  certPem: string;
  keyPem: string;
}

function fetchHttps(port: number, ca: string, path: string, body: string, cert?: ClientCert): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        servername: 'localhost',
        ca,
        ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
        headers: { 'content-type': 'application/json' },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            headers: res.headers,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function fetchPlain(port: number, path: string, body: string, method = 'POST'): Promise<Reply> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    ...(method === 'POST' ? { body } : {}),
  });
  return { status: res.status, body: await res.text(), headers: Object.fromEntries(res.headers) };
}

function isObject(v: unknown): v is ProtoObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseResponse(reply: Reply): { version_info: string; type_url: string; resources: ProtoObject[] } {
  assert.equal(reply.status, 200, reply.body);
  const parsed: unknown = JSON.parse(reply.body);
  assert.ok(isObject(parsed));
  const resources = parsed['resources'] ?? [];
  assert.ok(Array.isArray(resources));
  return {
    version_info: String(parsed['version_info']),
    type_url: String(parsed['type_url']),
    resources: resources.filter(isObject),
  };
}

function nameOf(r: ProtoValue): string {
  if (!isObject(r)) return '';
  const n = r['name'] ?? r['cluster_name'];
  return typeof n === 'string' ? n : '';
}

const body = (nodeId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ node: { id: nodeId }, ...extra });

describe('REST xDS over mTLS', () => {
  const mesh = bookstoreMesh();
  const buyer = proxyFor(mesh, 'bookbuyer-1').identity;
  const thief = proxyFor(mesh, 'bookthief-1').identity;
  let fx: Fixture<MeshSource>;
  let rest: RestXds;
  let server: RestXdsServer;
  let port: number;
  let ca: BuiltinCA;
  let buyerCert: ClientCert;
  const prepared: string[] = [];

  before(async () => {
    fx = await startFixture({ source: new MeshSource(mesh) });
    ca = fx.ca;
    rest = new RestXds({
      source: fx.source,
      cache: fx.server.cache,
      trustDomain: TRUST_DOMAIN,
      logger: silentLogger(),
      prepareSecrets: async (identity) => {
        prepared.push(identity.cn);
      },
    });
    const serving = await ca.issueServerCert(['localhost', '127.0.0.1']);
    server = new RestXdsServer(rest, {
      caPem: ca.trustBundlePem,
      certPem: serving.certPem,
      keyPem: serving.keyPem,
    });
    port = await server.listen(0, '127.0.0.1');
    buyerCert = await ca.issue({ commonName: buyer.cn, validityMs: 3_600_000, usage: 'client' });
  });
  after(async () => {
    await server.close();
    await fx.close();
  });

  it('refuses a caller without a client certificate, before reading its request', async () => {
    const reply = await fetchHttps(port, ca.trustBundlePem, '/v3/discovery:clusters', 'not json');
    assert.equal(reply.status, 401);
    assert.match(reply.body, /client certificate issued by the mesh CA is required/);
  });

  it('refuses a certificate from another CA', async () => {
    const foreign = await fx.otherCa.issue({ commonName: buyer.cn, validityMs: 3_600_000, usage: 'client' });
    const reply = await fetchHttps(
      port,
      ca.trustBundlePem,
      '/v3/discovery:clusters',
      body(buyer.cn),
      foreign,
    );
    assert.equal(reply.status, 401);
    assert.match(reply.body, /client certificate not trusted/);
  });

  it("answers 403 when node A's certificate asks for node B, or the CN is no proxy identity", async () => {
    const reply = await fetchHttps(
      port,
      ca.trustBundlePem,
      '/v3/discovery:clusters',
      body(thief.cn),
      buyerCert,
    );
    assert.equal(reply.status, 403);
    assert.match(reply.body, /is not the client certificate's CN/);
    assert.ok(reply.body.includes(buyer.cn));
    const odd = await ca.issue({ commonName: 'someone.example', validityMs: 3_600_000, usage: 'client' });
    const odder = await fetchHttps(
      port,
      ca.trustBundlePem,
      '/v3/discovery:clusters',
      body('someone.example'),
      odd,
    );
    assert.equal(odder.status, 403);
    assert.match(odder.body, /invalid proxy identity/);
  });

  it('answers 400 naming the problem, 405 for a GET-style method, 404 for an unknown path', async () => {
    const bad = await fetchHttps(port, ca.trustBundlePem, '/v3/discovery:clusters', '{"node":', buyerCert);
    assert.equal(bad.status, 400);
    assert.match(bad.body, /body is not JSON/);
    const noNode = await fetchHttps(port, ca.trustBundlePem, '/v3/discovery:clusters', '{}', buyerCert);
    assert.equal(noNode.status, 400);
    assert.match(noNode.body, /node\.id is required/);
    const unknown = await fetchHttps(
      port,
      ca.trustBundlePem,
      '/v3/discovery:runtime',
      body(buyer.cn),
      buyerCert,
    );
    assert.equal(unknown.status, 404);
  });

  it("serves node A exactly what ADS streams to A, type by type, and only A's own secrets", async () => {
    const ads = await fx.client(buyer.cn);
    const node = { id: buyer.cn, cluster: 'bookbuyer' };
    const viaAds = async (typeUrl: string, resourceNames: string[] = []): Promise<ReceivedResponse> => {
      ads.send({ typeUrl, node, resourceNames });
      const r = await ads.next();
      assert.equal(r.typeUrl, typeUrl);
      return r;
    };
    const viaRest = async (typeUrl: TypeUrl, path: string, names: string[] = []) => {
      const json = parseResponse(
        await fetchHttps(port, ca.trustBundlePem, path, body(buyer.cn, { resource_names: names }), buyerCert),
      );
      assert.equal(json.type_url, typeUrl);
      return json;
    };
    const compare = (r: ReceivedResponse, json: ReturnType<typeof parseResponse>) => {
      // The version hashes the encoded bytes: equal versions mean byte-equal resources.
      assert.equal(json.version_info, r.versionInfo);
      assert.equal(json.type_url, r.typeUrl);
      assert.deepEqual(
        json.resources,
        r.resources.map((res) => anyJson(res.typeUrl, res.value)),
      );
    };

    const cds = await viaAds(TypeUrl.Cluster);
    const restCds = await viaRest(TypeUrl.Cluster, '/v3/discovery:clusters');
    assert.ok(restCds.resources.length > 0);
    compare(cds, restCds);
    assert.ok(restCds.resources.every((r) => r['@type'] === TypeUrl.Cluster));

    const lds = await viaAds(TypeUrl.Listener);
    compare(lds, await viaRest(TypeUrl.Listener, '/v3/discovery:listeners'));

    const edsNames = cds.names.filter((n) => n.includes('/'));
    assert.ok(edsNames.length > 0);
    const eds = await viaAds(TypeUrl.ClusterLoadAssignment, edsNames);
    compare(eds, await viaRest(TypeUrl.ClusterLoadAssignment, '/v3/discovery:endpoints', edsNames));
    // No names: the assignments of every cluster the proxy gets, as for the other types.
    const allEds = await viaRest(TypeUrl.ClusterLoadAssignment, '/v3/discovery:endpoints');
    assert.deepEqual(allEds.resources.map((r) => String(r['cluster_name'])).sort(), [...edsNames].sort());
    assert.equal(allEds.version_info, eds.versionInfo);

    const restRds = await viaRest(TypeUrl.RouteConfiguration, '/v3/discovery:routes');
    const rdsNames = restRds.resources.map(nameOf);
    assert.ok(rdsNames.length > 0);
    compare(await viaAds(TypeUrl.RouteConfiguration, rdsNames), restRds);

    // SDS: asking for everything still yields only the caller's own identity.
    const restSds = await viaRest(TypeUrl.Secret, '/v3/discovery:secrets');
    const sdsNames = restSds.resources.map(nameOf);
    assert.ok(sdsNames.includes('service-cert:self'), sdsNames.join());
    // Other names are validation contexts (CA + SANs); the only private key is the caller's.
    assert.deepEqual(restSds.resources.filter((r) => r['tls_certificate'] !== undefined).map(nameOf), [
      'service-cert:self',
    ]);
    assert.deepEqual(prepared, [buyer.cn], 'certificates prepared for the caller before SDS');
    const sds = await viaAds(TypeUrl.Secret, sdsNames);
    compare(sds, restSds);
    // Asking by name for another identity's key gets nothing.
    const stolen = await viaRest(TypeUrl.Secret, '/v3/discovery:secrets', [
      'service-cert:bookthief/bookthief',
    ]);
    assert.deepEqual(stolen.resources, []);
  });

  it('answers 304 Not Modified when the caller holds the current version, 200 again otherwise', async () => {
    const first = parseResponse(
      await fetchHttps(port, ca.trustBundlePem, '/v3/discovery:clusters', body(buyer.cn), buyerCert),
    );
    const same = await fetchHttps(
      port,
      ca.trustBundlePem,
      '/v3/discovery:clusters',
      body(buyer.cn, { version_info: first.version_info }),
      buyerCert,
    );
    assert.equal(same.status, 304);
    assert.equal(same.body, '');
    const stale = await fetchHttps(
      port,
      ca.trustBundlePem,
      '/v3/discovery:clusters',
      body(buyer.cn, { versionInfo: 'older' }),
      buyerCert,
    );
    assert.equal(parseResponse(stale).version_info, first.version_info);
  });
});

describe('REST xDS on the plain HTTP port', () => {
  const mesh = bookstoreMesh();
  const buyer = proxyFor(mesh, 'bookbuyer-1').identity;
  let http: Server;
  let port: number;
  let fx: Fixture<MeshSource>;

  before(async () => {
    fx = await startFixture({ source: new MeshSource(mesh) });
    const rest = new RestXds({
      source: fx.source,
      cache: fx.server.cache,
      trustDomain: TRUST_DOMAIN,
      logger: silentLogger(),
    });
    const refuse = refusePlainRestXds(15127);
    http = createHttpServer((req, res) =>
      req.url?.startsWith('/cluster/') ? refuse(req, res) : rest.handleNodeId(req, res),
    );
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    port = (http.address() as AddressInfo).port;
  });
  after(async () => {
    http.closeAllConnections();
    await new Promise((r) => http.close(r));
    await fx.close();
  });

  it('local mode: the identity is node.id', async () => {
    const json = parseResponse(await fetchPlain(port, '/v3/discovery:clusters', body(buyer.cn)));
    assert.ok(json.resources.length > 0);
    const bad = await fetchPlain(port, '/v3/discovery:clusters', body('not-a-proxy'));
    assert.equal(bad.status, 400);
    assert.match(bad.body, /node\.id: invalid proxy identity/);
    const get = await fetchPlain(port, '/v3/discovery:clusters', '', 'GET');
    assert.equal(get.status, 405);
    assert.equal(get.headers['allow'], 'POST');
  });

  it('Kubernetes mode: refused with where to go instead', async () => {
    const reply = await fetchPlain(port, '/cluster/v3/discovery:clusters', body(buyer.cn));
    assert.equal(reply.status, 403);
    assert.match(reply.body, /REST xDS requires mTLS on port 15127/);
  });
});
