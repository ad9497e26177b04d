import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { silentLogger } from '../logger/logger.js';
import { KubeApiError } from '../registry/kube/client.js';
import { BuiltinCA } from './builtin.js';
import {
  FileIngressCertSink,
  type IngressCertSink,
  IngressGatewayCertificates,
  KubeIngressSecretSink,
} from './ingress-gateway.js';
import type { IssuedCertificate } from './types.js';

const SPEC = {
  subjectAltNames: ['ingress-nginx.ingress-nginx.cluster.local'],
  validityDuration: '2s',
  secret: { name: 'osm-nginx-client-cert', namespace: 'skein-system' },
};

test('issues a client certificate with the SANs into the state dir, and reissues before expiry', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-ingress-'));
  const ca = await BuiltinCA.create();
  const issued: IssuedCertificate[] = [];
  const certs = new IngressGatewayCertificates({
    ca,
    sink: new FileIngressCertSink(dir),
    logger: silentLogger(),
    onIssued: (c) => issued.push(c),
  });
  try {
    certs.update(SPEC);
    const deadline = Date.now() + 5_000;
    while (issued.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(issued.length >= 2, `issued ${issued.length} (rotation at 75% of 2 s)`);
    const files = FileIngressCertSink.pathOf(dir, SPEC.secret);
    const x = new X509Certificate(await readFile(path.join(files, 'tls.crt')));
    assert.match(x.subjectAltName ?? '', /DNS:ingress-nginx\.ingress-nginx\.cluster\.local/);
    assert.ok(x.verify(new X509Certificate(ca.trustBundlePem).publicKey), 'signed by the mesh CA');
    assert.equal(await readFile(path.join(files, 'ca.crt'), 'utf8'), issued.at(-1)?.caPem);
    // An unchanged spec issues nothing new; removing it stops the rotation.
    const before = issued.length;
    certs.update(SPEC);
    certs.update(undefined);
    await new Promise((r) => setTimeout(r, 1_700));
    assert.equal(issued.length, before);
  } finally {
    certs.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test('Kubernetes mode: POST a kubernetes.io/tls Secret, merge-patch its data when it exists', async () => {
  const calls: { method: string; path: string; body: unknown }[] = [];
  let exists = false;
  const sink: IngressCertSink = new KubeIngressSecretSink({
    async request(method, p, options) {
      calls.push({ method, path: p, body: options?.body });
      if (method === 'POST' && exists) throw new KubeApiError(409, 'AlreadyExists', 'exists');
      exists = true;
      return {};
    },
  });
  const ca = await BuiltinCA.create();
  const cert = await ca.issue({ commonName: 'x', dnsSans: ['x'], validityMs: 60_000, usage: 'client' });
  await sink.write(SPEC.secret, cert);
  await sink.write(SPEC.secret, cert);
  assert.deepEqual(
    calls.map((c) => `${c.method} ${c.path}`),
    [
      'POST /api/v1/namespaces/skein-system/secrets',
      'POST /api/v1/namespaces/skein-system/secrets',
      'PATCH /api/v1/namespaces/skein-system/secrets/osm-nginx-client-cert',
    ],
  );
  assert.match(JSON.stringify(calls[0]?.body), /"type":"kubernetes.io\/tls"/);
});

test('a refused write is a problem naming the Secret and what to do; a later success clears it', async () => {
  const ca = await BuiltinCA.create();
  let refuse = true;
  const problems: ({ secret: { name: string; namespace: string }; reason: string } | undefined)[] = [];
  const certs = new IngressGatewayCertificates({
    ca,
    sink: {
      write: async () => {
        if (refuse) throw new KubeApiError(403, 'Forbidden', 'denied by policy');
      },
    },
    logger: silentLogger(),
    onProblem: (p) => problems.push(p),
  });
  try {
    certs.update(SPEC);
    const deadline = Date.now() + 5_000;
    while (problems.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const [first] = problems;
    assert.deepEqual(first?.secret, SPEC.secret);
    assert.match(first?.reason ?? '', /never overwritten: delete it, or name another Secret/);
    refuse = false;
    // The retry comes 10 s later; a new spec issues at once.
    certs.update({ ...SPEC, subjectAltNames: ['other.ingress.cluster.local'] });
    while (problems.at(-1) !== undefined && Date.now() < deadline + 5_000)
      await new Promise((r) => setTimeout(r, 20));
    assert.equal(problems.at(-1), undefined);
  } finally {
    certs.stop();
  }
});
