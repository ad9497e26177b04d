// The real Envoy (each version `make envoy-bin` fetches) running what skein
// generates for the bookstore mesh, on loopback with static configuration
// (test/support/envoy-static.ts, run by test/support/envoy-bin.ts): every
// sidecar configuration loads without a deprecated field, and SMI denials are
// visible — at the destination a 403 that says why, with an rbac stat (TCP:
// refused in the handshake, so a server-first app never greets a denied
// caller); at the caller's own sidecar a 403 or a closed connection for
// destinations it may not call — while what is allowed, server-first TCP
// included, still works. Skipped for a version whose binary is missing.
import assert from 'node:assert/strict';
import http, { type OutgoingHttpHeaders } from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import type { IssuedCertificate } from '../../pkg/certificate/types.js';
import { fetchSidecarConfig } from '../support/envoy/fetch.js';
import {
  bookstoreMesh,
  bookstoreVariants,
  POD_NAMES,
  type PodName,
  proxyFor,
} from '../support/envoy/mesh.js';
import { ENVOY_VERSIONS, EnvoyProcess, envoyValidate, hasEnvoy } from '../support/envoy-bin.js';
import {
  bootstrapJson,
  type IssuedMesh,
  issueMeshCertificates,
  type StaticOptions,
  staticBootstrap,
} from '../support/envoy-static.js';
import { freePorts } from '../support/processes.js';

const TRUST_DOMAIN = 'cluster.local';
const IDENTITIES = [
  'bookbuyer/bookbuyer',
  'bookthief/bookthief',
  'bookstore/bookstore-v1',
  'bookstore/bookstore-v2',
  'bookwarehouse/bookwarehouse',
  'bookwarehouse/mysql',
];
// bookstore-routes' books-bought match: GET, path, and two headers.
const BOOKS_BOUGHT_HEADERS = { 'user-agent': 'go-http-client/1.1', 'client-app': 'bookbuyer' };
const GREETING = 'server speaks first\n';

interface Reply {
  status: number | undefined;
  body: string;
}

/** One HTTP/1.1 request; the reply's status and whole body. */
function request(options: http.RequestOptions): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(options, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function httpGet(address: string, port: number, path: string, headers: OutgoingHttpHeaders): Promise<Reply> {
  return request({ host: address, port, path, headers, agent: false });
}

/** HTTPS straight to a sidecar's inbound listener, as a mesh workload's sidecar would call it. */
function meshGet(
  port: number,
  sni: string,
  cert: IssuedCertificate,
  path: string,
  ca: string,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port,
      servername: sni,
      ca,
      cert: cert.certPem,
      key: cert.keyPem,
      // The server's certificate names its SPIFFE id only (no DNS SAN).
      checkServerIdentity: () => undefined,
    });
    socket.on('error', reject);
    socket.on('secureConnect', () => {
      const headers = { host: sni, ...BOOKS_BOUGHT_HEADERS };
      request({ createConnection: () => socket, path, headers }).then(resolve, reject);
    });
  });
}

interface Exchange {
  received: string;
  firstDataAfterMs: number | undefined;
  /** When the peer closed, or undefined if it was still open after `waitMs`. */
  closedAfterMs: number | undefined;
  error?: string;
}

/** Connects (optionally with mTLS), sends `send` if given, and reports what came back. */
function exchange(
  port: number,
  opts: { send?: string; waitMs: number; tls?: tls.ConnectionOptions },
): Promise<Exchange> {
  return new Promise((resolve) => {
    const start = Date.now();
    const result: Exchange = { received: '', firstDataAfterMs: undefined, closedAfterMs: undefined };
    const socket = opts.tls
      ? tls.connect({ host: '127.0.0.1', port, ...opts.tls })
      : net.connect(port, '127.0.0.1');
    socket.once(opts.tls ? 'secureConnect' : 'connect', () => {
      if (opts.send !== undefined) socket.write(opts.send);
    });
    socket.on('data', (d: Buffer) => {
      result.firstDataAfterMs ??= Date.now() - start;
      result.received += d.toString();
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      result.error = e.code ?? e.message;
    });
    socket.on('close', () => {
      result.closedAfterMs ??= Date.now() - start;
      clearTimeout(timer);
      resolve(result);
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(result);
    }, opts.waitMs);
  });
}

/** One gRPC-shaped call over h2c; Envoy's local reply carries the status in the headers. */
function h2cCall(port: number, authority: string): Promise<Record<string, string | string[] | undefined>> {
  return new Promise((resolve, reject) => {
    const client = http2.connect(`http://127.0.0.1:${port}`);
    client.on('error', reject);
    const req = client.request({
      ':method': 'POST',
      ':path': '/skein.test.Echo/Who',
      ':authority': authority,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let headers: Record<string, string | string[] | undefined> = {};
    req.on('response', (h) => {
      headers = { ...h };
    });
    req.on('data', () => {});
    req.on('end', () => {
      client.close();
      resolve(headers);
    });
    req.on('error', reject);
    req.end();
  });
}

function listening(server: net.Server, port: number): Promise<void> {
  return new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
}

function closed(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

for (const version of ENVOY_VERSIONS) {
  const skip = hasEnvoy(version) ? false : `no Envoy ${version}: run \`make envoy-bin\``;

  describe(`Envoy ${version} on skein's sidecar configuration`, { skip }, () => {
    let issued: IssuedMesh;
    const envoys: EnvoyProcess[] = [];
    const servers: net.Server[] = [];
    let appRequests: string[] = [];
    // The app's connections from its sidecar that are still open.
    const appSockets = new Set<net.Socket>();
    // Loopback ports: admin ×3, bookstore-v1 inbound, bookbuyer outbound (mesh port and any
    // other), bookwarehouse inbound and outbound (3306 and any other), the apps.
    let ports: number[] = [];
    const port = (i: number): number => {
      const p = ports[i];
      if (p === undefined) throw new Error(`no port ${i}`);
      return p;
    };
    const [STORE_IN, BUYER_OUT, BUYER_ANY, WAREHOUSE_IN, WAREHOUSE_DB, WAREHOUSE_ANY] = [3, 4, 5, 6, 7, 8];
    const [HTTP_APP, DB_APP, MYSQL_SIDECAR] = [9, 10, 11];
    // A fourth bookwarehouse sidecar whose mysql endpoint is an impostor: admin, outbound, the impostor.
    const [IMPOSTOR_ADMIN, IMPOSTOR_DB, IMPOSTOR] = [12, 13, 14];

    async function run(pod: PodName, adminIndex: number, opts: Omit<StaticOptions, 'adminPort'>) {
      const mesh = bookstoreMesh();
      const res = fetchSidecarConfig(proxyFor(mesh, pod), { mesh, secrets: issued.secrets });
      const json = bootstrapJson(staticBootstrap(res, { ...opts, adminPort: port(adminIndex) }));
      // One worker each: three run side by side, and no test needs more.
      const envoy = await EnvoyProcess.start(version, json, { concurrency: 1 });
      envoys.push(envoy);
      await envoy.live();
      return envoy;
    }

    before(async () => {
      issued = await issueMeshCertificates(IDENTITIES, TRUST_DOMAIN);
      ports = await freePorts(15);
      const app = http.createServer((req, res) => {
        appRequests.push(`${req.method} ${req.url}`);
        res.end(`bookstore saw ${req.url}\n`);
      });
      app.on('connection', (s: net.Socket) => {
        appSockets.add(s);
        s.on('close', () => appSockets.delete(s));
      });
      const greeter = net.createServer((s) => {
        s.on('error', () => {});
        s.write(GREETING);
      });
      // mysql's sidecar as bookwarehouse's outbound cluster reaches it: mTLS with mysql's certificate.
      const mysql = issued.cert('bookwarehouse/mysql');
      const mysqlSidecar = tls.createServer(
        { cert: mysql.certPem, key: mysql.keyPem, ca: issued.ca.trustBundlePem, requestCert: true },
        (s) => {
          s.on('error', () => {});
          s.write(GREETING);
        },
      );
      servers.push(app, greeter, mysqlSidecar);
      await listening(app, port(HTTP_APP));
      await listening(greeter, port(DB_APP));
      await listening(mysqlSidecar, port(MYSQL_SIDECAR));
      await run('bookstore-v1-1', 0, {
        listeners: [{ listener: 'inbound-listener', port: port(STORE_IN) }],
        destinationPorts: new Map([[14001, port(STORE_IN)]]),
        // Both services of the pod share the target port.
        endpoints: new Map([
          ['bookstore/bookstore|14001|local', port(HTTP_APP)],
          ['bookstore/bookstore-v1|14001|local', port(HTTP_APP)],
        ]),
      });
      await run('bookbuyer-1', 1, {
        listeners: [
          { listener: 'outbound-listener', port: port(BUYER_OUT) },
          // The same port on another address: a destination no chain's IP matches.
          { listener: 'outbound-listener', port: port(BUYER_OUT), address: '127.0.0.2', name: 'unknown-ip' },
          { listener: 'outbound-listener', port: port(BUYER_ANY), name: 'other-port' },
        ],
        destinationPorts: new Map([[14001, port(BUYER_OUT)]]),
        destinationIps: new Map([['10.96.0.11', '127.0.0.1']]),
        endpoints: new Map([['bookstore/bookstore-v1|14001', port(STORE_IN)]]),
      });
      await run('bookwarehouse-1', 2, {
        listeners: [
          { listener: 'inbound-listener', port: port(WAREHOUSE_IN) },
          { listener: 'outbound-listener', port: port(WAREHOUSE_DB) },
          { listener: 'outbound-listener', port: port(WAREHOUSE_ANY), name: 'other-port' },
        ],
        destinationPorts: new Map([
          [13306, port(WAREHOUSE_IN)],
          [3306, port(WAREHOUSE_DB)],
        ]),
        endpoints: new Map([
          ['bookwarehouse/bookwarehouse|13306|local', port(DB_APP)],
          ['bookwarehouse/mysql|3306', port(MYSQL_SIDECAR)],
        ]),
      });
    });

    after(async () => {
      for (const e of envoys) await e.stop();
      for (const s of servers) await closed(s);
    });

    const started = (i: number): EnvoyProcess => {
      const e = envoys[i];
      if (!e) throw new Error(`Envoy ${i} did not start`);
      return e;
    };
    const storeEnvoy = () => started(0);
    const buyerEnvoy = () => started(1);
    const warehouseEnvoy = () => started(2);
    const INBOUND_STORE = 'http.inbound_bookstore/bookstore-v1_14001_http.rbac';

    test('every sidecar configuration loads in validate mode, without a deprecated field', async () => {
      for (const [mode, mesh] of bookstoreVariants()) {
        for (const pod of POD_NAMES) {
          const res = fetchSidecarConfig(proxyFor(mesh, pod), { mesh, secrets: issued.secrets });
          // Warnings and worse only: what a deprecated field logs, without the info lines around it.
          const { code, output } = await envoyValidate(
            version,
            bootstrapJson(staticBootstrap(res, { adminPort: 0 })),
            { logLevel: 'warning' },
          );
          assert.equal(code, 0, `${mode} ${pod}: ${output}`);
          assert.doesNotMatch(output, /deprecated/i, `${mode} ${pod}`);
        }
      }
    });

    test('an allowed request passes both sidecars (typed SAN pinning upstream, trust domain downstream)', async () => {
      appRequests = [];
      const reply = await httpGet('127.0.0.1', port(BUYER_OUT), '/books-bought', {
        host: 'bookstore-v1.bookstore:14001',
        ...BOOKS_BOUGHT_HEADERS,
      });
      assert.deepEqual(reply, { status: 200, body: 'bookstore saw /books-bought\n' });
      assert.deepEqual(appRequests, ['GET /books-bought']);
    });

    test("the sidecar closes an idle connection to the app before the app's keep-alive timeout can", async () => {
      // Node's server keeps an idle connection 5 s; were the app to close it first, a request the
      // sidecar had just put on it would fail with "connection termination" (cds/sidecar.ts).
      const idleClosed = async () => {
        const stats = await storeEnvoy().stats();
        return [...stats]
          .filter(([k]) => /^cluster\..*\|local\.upstream_cx_idle_timeout$/.test(k))
          .reduce((n, [, v]) => n + v, 0);
      };
      const before = await idleClosed();
      const get = () =>
        httpGet('127.0.0.1', port(BUYER_OUT), '/books-bought', {
          host: 'bookstore-v1.bookstore:14001',
          ...BOOKS_BOUGHT_HEADERS,
        });
      assert.equal((await get()).status, 200);
      const sentAt = Date.now();
      while (appSockets.size > 0 && Date.now() - sentAt < 4000) await new Promise((r) => setTimeout(r, 50));
      const closedAfter = Date.now() - sentAt;
      assert.equal(
        appSockets.size,
        0,
        'the app still holds a connection from its sidecar 4 s after the last request',
      );
      assert.ok(closedAfter < 4000, `closed after ${closedAfter} ms`);
      assert.ok((await idleClosed()) > before, 'the sidecar counted no idle-timeout close toward the app');
      assert.equal((await get()).status, 200, 'the next request opens a new connection');
    });

    test('a route the HTTPRouteGroup does not match: 403 from the destination naming the caller, rbac.denied', async () => {
      appRequests = [];
      const denied = (await storeEnvoy().stats()).get(`${INBOUND_STORE}.denied`) ?? 0;
      const reply = await httpGet('127.0.0.1', port(BUYER_OUT), '/not-a-route', {
        host: 'bookstore-v1.bookstore:14001',
      });
      assert.equal(reply.status, 403);
      assert.equal(
        reply.body,
        'skein: RBAC denied: no TrafficTarget allows spiffe://cluster.local/ns/bookbuyer/sa/bookbuyer' +
          ' to call this route (rbac_access_denied_matched_policy[none])\n',
      );
      assert.deepEqual(appRequests, []);
      assert.equal((await storeEnvoy().stats()).get(`${INBOUND_STORE}.denied`), denied + 1);
    });

    test('an identity no TrafficTarget names completes the handshake and gets a 403 naming it', async () => {
      appRequests = [];
      const sni = 'bookstore-v1.bookstore.svc.cluster.local';
      const ca = issued.ca.trustBundlePem;
      const reply = await meshGet(
        port(STORE_IN),
        sni,
        issued.cert('bookthief/bookthief'),
        '/books-bought',
        ca,
      );
      assert.equal(reply.status, 403);
      assert.match(
        reply.body,
        /^skein: RBAC denied: no TrafficTarget allows spiffe:\/\/cluster\.local\/ns\/bookthief\/sa\/bookthief to call this route/,
      );
      assert.deepEqual(appRequests, []);
    });

    test("certificates of another CA, or of the mesh's CA for another trust domain, fail the handshake", async () => {
      const other = await issueMeshCertificates(['bookbuyer/bookbuyer'], TRUST_DOMAIN);
      const sni = 'bookstore-v1.bookstore.svc.cluster.local';
      const ca = issued.ca.trustBundlePem;
      await assert.rejects(
        meshGet(port(STORE_IN), sni, other.cert('bookbuyer/bookbuyer'), '/books-bought', ca),
      );
      // The mesh's own CA, but a SPIFFE id outside its trust domain (the prefix ends in a slash).
      const evil = await issued.ca.issue({
        commonName: 'bookbuyer.bookbuyer.cluster.local.evil',
        uriSans: ['spiffe://cluster.local.evil/ns/bookbuyer/sa/bookbuyer'],
        validityMs: 60_000,
        usage: 'both',
      });
      await assert.rejects(meshGet(port(STORE_IN), sni, evil, '/books-bought', ca));
    });

    test('HTTP to a destination the caller may not call: 403 from its own sidecar naming the authority', async () => {
      const before = (await buyerEnvoy().stats()).get('http.outbound_denied.rq_direct_response') ?? 0;
      // bookstore-v2 directly (bookbuyer reaches it only through the split) on the mesh port.
      const samePort = await httpGet('127.0.0.2', port(BUYER_OUT), '/', {
        host: 'bookstore-v2.bookstore:14001',
      });
      assert.deepEqual(samePort, {
        status: 403,
        body:
          'skein: bookstore-v2.bookstore:14001 is not allowed by the mesh policy for this proxy' +
          ' (SMI mode: no TrafficTarget allows its identity to call this destination)\n',
      });
      const otherPort = await httpGet('127.0.0.1', port(BUYER_ANY), '/', { host: 'example.com' });
      assert.equal(otherPort.status, 403);
      assert.match(otherPort.body, /^skein: example\.com is not allowed by the mesh policy for this proxy/);
      // gRPC (h2c): Envoy maps the 403 to PERMISSION_DENIED and carries the body as grpc-message.
      const grpc = await h2cCall(port(BUYER_ANY), 'bookwarehouse.bookwarehouse:14001');
      assert.equal(grpc['grpc-status'], '7');
      assert.match(String(grpc['grpc-message']), /^skein: bookwarehouse\.bookwarehouse:14001 is not allowed/);
      const stats = await buyerEnvoy().stats();
      assert.equal(stats.get('http.outbound_denied.rq_direct_response'), before + 3);
    });

    test('other TCP to such a destination is closed at once; a silent client after the inspector timeout', async () => {
      const none = (await buyerEnvoy().stats()).get('cluster.blackhole.upstream_cx_none_healthy') ?? 0;
      const talker = await exchange(port(BUYER_ANY), { send: '\u0000\u0001not http', waitMs: 5000 });
      assert.equal(talker.received, '');
      assert.ok(talker.closedAfterMs !== undefined && talker.closedAfterMs < 500, JSON.stringify(talker));
      // Server-first protocols send nothing: held for listener_filters_timeout (1 s), then closed.
      const silent = await exchange(port(BUYER_ANY), { waitMs: 5000 });
      assert.equal(silent.received, '');
      assert.ok(
        silent.closedAfterMs !== undefined && silent.closedAfterMs >= 900 && silent.closedAfterMs < 3000,
        JSON.stringify(silent),
      );
      const stats = await buyerEnvoy().stats();
      assert.equal(stats.get('cluster.blackhole.upstream_cx_none_healthy'), none + 2);
    });

    test('server-first TCP to a mesh destination is not held by the HTTP inspector', async () => {
      // bookwarehouse → mysql (3306, a TCP port: the inspector is off there).
      const reply = await exchange(port(WAREHOUSE_DB), { waitMs: 3000 });
      assert.equal(reply.received, GREETING);
      // Well before the listener filter timeout (1 s) an inspector would wait for.
      assert.ok(reply.firstDataAfterMs !== undefined && reply.firstDataAfterMs < 500, JSON.stringify(reply));
      const stats = await warehouseEnvoy().stats();
      assert.equal(stats.get('tcp.outbound_bookwarehouse/mysql_3306_tcp.downstream_cx_total'), 1);
      assert.equal(
        stats.get('listener.127.0.0.1_' + port(WAREHOUSE_DB) + '.downstream_pre_cx_timeout') ?? 0,
        0,
      );
    });

    test("an upstream presenting another identity of the mesh CA is refused by the caller's cluster (SANs in the cluster, CA over SDS)", async () => {
      // bookthief's certificate is signed by the same CA, so only the cluster's SAN
      // matchers (combined with the trust-bundle secret, common/tls.ts) can refuse it.
      const thief = issued.cert('bookthief/bookthief');
      let greeted = 0;
      const impostor = tls.createServer(
        { cert: thief.certPem, key: thief.keyPem, ca: issued.ca.trustBundlePem, requestCert: true },
        (s) => {
          greeted++;
          s.on('error', () => {});
          s.write(GREETING);
        },
      );
      servers.push(impostor);
      await listening(impostor, port(IMPOSTOR));
      const envoy = await run('bookwarehouse-1', IMPOSTOR_ADMIN, {
        listeners: [{ listener: 'outbound-listener', port: port(IMPOSTOR_DB) }],
        destinationPorts: new Map([[3306, port(IMPOSTOR_DB)]]),
        endpoints: new Map([['bookwarehouse/mysql|3306', port(IMPOSTOR)]]),
      });
      const reply = await exchange(port(IMPOSTOR_DB), { waitMs: 1500 });
      assert.equal(reply.received, '', JSON.stringify(reply));
      assert.equal(greeted, 0);
      const stats = await envoy.stats();
      assert.ok(
        (stats.get('cluster.bookwarehouse/mysql|3306.ssl.fail_verify_san') ?? 0) >= 1,
        'fail_verify_san',
      );
      // The genuine mysql sidecar still passes the same cluster (the greeting test above, other sidecar).
    });

    test('inbound TCP keeps callers pinned in the handshake: a denied caller never sees a server-first greeting', async () => {
      const ca = issued.ca.trustBundlePem;
      const as = (key: string, send?: string) => {
        const c = issued.cert(key);
        const options = {
          ca,
          cert: c.certPem,
          key: c.keyPem,
          servername: 'bookwarehouse.bookwarehouse.svc.cluster.local',
          checkServerIdentity: () => undefined,
        };
        return exchange(port(WAREHOUSE_IN), { waitMs: 1500, tls: options, ...(send ? { send } : {}) });
      };
      const allowed = await as('bookstore/bookstore-v1');
      assert.equal(allowed.received, GREETING);
      const thief = await as('bookthief/bookthief');
      assert.equal(thief.received, '');
      assert.ok(thief.error !== undefined || thief.closedAfterMs !== undefined, JSON.stringify(thief));
      const stats = await warehouseEnvoy().stats();
      assert.ok((stats.get(`listener.127.0.0.1_${port(WAREHOUSE_IN)}.ssl.fail_verify_san`) ?? 0) >= 1);
    });
  });
}
