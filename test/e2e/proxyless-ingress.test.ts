// IngressBackend on a proxyless gRPC server, enforced by a real grpc-js-xds
// XdsServer configured by the local-mode controller: plain gRPC clients (no
// xDS, as an ingress controller outside the mesh) dial the server from
// distinct loopback source addresses. 127.0.0.50 stands for the ingress
// controller, 127.0.0.60 for anyone else.
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LocalMesh } from '../support/local-mesh.js';
import { type PlainCall, type PlainResult, plainGrpcCall } from '../support/plain-grpc.js';
import { sleep } from '../support/processes.js';

const WHO = '/skein.test.Echo/Who';
const SERVER_IP = '127.0.0.21';
const INGRESS = '127.0.0.50';
const STRANGER = '127.0.0.60';
const THIEF_ID = 'spiffe://cluster.local/ns/bookthief/sa/bookthief';

interface KeyPair {
  ca: string;
  cert: string;
  key: string;
}

describe('IngressBackend on a proxyless gRPC server (grpc-js-xds)', () => {
  let mesh: LocalMesh;
  let port: number;
  let buyer: KeyPair;
  let thief: KeyPair;

  /** A workload's certificate files, read from its proxyless bootstrap: real mesh-CA certificates. */
  async function keyPair(ns: string, pod: string): Promise<KeyPair> {
    const b = JSON.parse(await readFile(mesh.bootstrap(ns, pod), 'utf8'));
    const c = b.certificate_providers.default.config;
    const [ca, cert, key] = await Promise.all(
      [c.ca_certificate_file, c.certificate_file, c.private_key_file].map((f: string) => readFile(f, 'utf8')),
    );
    return { ca: ca ?? '', cert: cert ?? '', key: key ?? '' };
  }

  function call(from: string, extra: Partial<PlainCall> = {}): Promise<PlainResult> {
    return plainGrpcCall({ from, host: SERVER_IP, port, path: WHO, ...extra });
  }

  /** Calls until `want` holds (the controller pushes, the server applies): the last result either way. */
  async function until(
    what: () => Promise<PlainResult>,
    want: (r: PlainResult) => boolean,
    timeoutMs = 15_000,
  ): Promise<PlainResult> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const r = await what();
      if (want(r) || Date.now() > end) return r;
      await sleep(100);
    }
  }

  /** The bookstore server's Listener state: version sent and whether it was ACKed or NACKed. */
  async function serverLds(): Promise<{ sent?: string; state?: string }> {
    const res = await fetch(`http://127.0.0.1:${mesh.ports.http}/debug/proxies`);
    const all = (await res.json()) as {
      identity: { kind: string; serviceAccount: string };
      types: Record<string, { sentVersion?: string; syncState: string }>;
    }[];
    const s = all.find((p) => p.identity.kind === 'grpc' && p.identity.serviceAccount === 'bookstore');
    const t = s?.types['type.googleapis.com/envoy.config.listener.v3.Listener'];
    return { sent: t?.sentVersion, state: t?.syncState };
  }

  /** Writes the manifest and waits until the server ACKed a new Listener version (fails on a NACK). */
  async function writeBackends(yaml: string | undefined): Promise<void> {
    const before = (await serverLds()).sent;
    if (yaml === undefined) await mesh.removeManifest('px-ingress.yaml');
    else await mesh.writeManifest('px-ingress.yaml', yaml);
    const end = Date.now() + 15_000;
    for (;;) {
      const now = await serverLds();
      if (now.sent !== before && (now.state === 'SYNCED' || now.state === 'NACKED')) {
        assert.equal(now.state, 'SYNCED', 'the server rejected its Listener');
        return;
      }
      assert.ok(Date.now() < end, `no new Listener acknowledged: ${JSON.stringify(now)}`);
      await sleep(100);
    }
  }

  before(async () => {
    mesh = await LocalMesh.start({
      // The example's IngressBackend and Ingress (bookstore.example.com) are replaced per test.
      prepare: (dir) => rm(path.join(dir, 'ingress.yaml')),
    });
    port = mesh.port(14021);
    await mesh.startServer('bookstore', 'bookstore-v1', SERVER_IP, 14021, false);
    [buyer, thief] = await Promise.all([
      keyPair('bookbuyer', 'bookbuyer'),
      keyPair('bookthief', 'bookthief'),
    ]);
  });
  after(async () => {
    await mesh?.stop();
  });

  test('without an IngressBackend a plain client is refused at the mTLS handshake', async () => {
    const r = await call(INGRESS);
    assert.equal(r.code, 'UNAVAILABLE', JSON.stringify(r));
  });

  // What grpc-js-xds 1.14 does with it, measured: XdsServer listens on `::`,
  // so the client's address is `::ffff:127.0.0.50`, which its cidr.js never
  // matches against an IPv4 range: the ingress chain is not selected and the
  // mesh chain (mTLS, SMI) decides. Fail closed; the server stays up.
  test('http: accepted by the server, but grpc-js-xds cannot select the chain for an IPv4 client (fail closed)', async () => {
    await writeBackends(`apiVersion: policy.skein.dev/v1alpha1
kind: IngressBackend
metadata: { name: px, namespace: bookstore }
spec:
  backends: [{ name: bookstore-v1, port: { number: ${port}, protocol: http } }]
  sources: [{ kind: IPRange, name: ${INGRESS}/32 }]
`);
    const [plain, stranger, buyerTls] = await Promise.all([
      call(INGRESS),
      call(STRANGER),
      call(INGRESS, { tls: buyer }),
    ]);
    assert.equal(plain.code, 'UNAVAILABLE', JSON.stringify(plain));
    assert.equal(stranger.code, 'UNAVAILABLE', JSON.stringify(stranger));
    // The mesh chain still serves its callers (bookbuyer has a TrafficTarget).
    assert.deepEqual(buyerTls, { code: 'OK', body: 'bookstore-v1' });
  });

  test('https (client certificate validated, or skipped): accepted by the server, the IngressBackend admits no one', async () => {
    await writeBackends(`apiVersion: policy.skein.dev/v1alpha1
kind: IngressBackend
metadata: { name: px, namespace: bookstore }
spec:
  backends:
    - name: bookstore-v1
      port: { number: ${port}, protocol: https }
      tls: { skipClientCertValidation: true }
  sources: [{ kind: IPRange, name: ${INGRESS} }]
`);
    const noCert = await call(INGRESS, { tls: { ca: buyer.ca } });
    assert.equal(noCert.code, 'UNAVAILABLE', JSON.stringify(noCert));
    await writeBackends(`apiVersion: policy.skein.dev/v1alpha1
kind: IngressBackend
metadata: { name: px, namespace: bookstore }
spec:
  backends: [{ name: bookstore-v1, port: { number: ${port}, protocol: https } }]
  sources:
    - { kind: IPRange, name: ${INGRESS} }
    - { kind: AuthenticatedPrincipal, name: "${THIEF_ID}" }
`);
    // The principal is bookthief's: were the chain selected, its certificate would pass.
    const thiefCert = await call(INGRESS, { tls: thief });
    assert.equal(thiefCert.code, 'PERMISSION_DENIED', JSON.stringify(thiefCert));
  });

  test("after the IngressBackend's removal the server is as before: mesh chain only", async () => {
    await writeBackends(undefined);
    // From the former ingress source, the mesh chain decides again: bookthief's
    // certificate is a mesh identity no TrafficTarget allows.
    const denied = await until(
      () => call(INGRESS, { tls: thief }),
      (r) => r.code === 'PERMISSION_DENIED',
    );
    assert.equal(denied.code, 'PERMISSION_DENIED', JSON.stringify(denied));
    const [noCert, plaintext] = await Promise.all([call(INGRESS, { tls: { ca: buyer.ca } }), call(INGRESS)]);
    assert.equal(noCert.code, 'UNAVAILABLE', JSON.stringify(noCert));
    assert.equal(plaintext.code, 'UNAVAILABLE', JSON.stringify(plaintext));
  });

  test('no workload rejected its configuration', () => {
    const nacks = mesh.controller.lines.filter((l) => l['msg'] === 'proxy rejected configuration (NACK)');
    assert.deepEqual(nacks, []);
  });
});
