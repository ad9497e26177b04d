// Certificates rotate before expiry and the rotated secrets reach proxies:
// over SDS for sidecars, as rewritten files for local proxyless workloads.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { adsClient, proxyCredentials } from '../support/envoy-like.js';
import { LocalMesh } from '../support/local-mesh.js';
import { sleep } from '../support/processes.js';

const BUYER = {
  uuid: '00000000-0000-4000-8000-000000000011',
  serviceAccount: 'bookbuyer',
  namespace: 'bookbuyer',
};
const VALIDITY_S = 4;

function serialOf(secret: unknown): string {
  const pem = JSON.stringify(secret).match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/)?.[0];
  assert.ok(pem, 'secret carries a certificate');
  return new X509Certificate(pem.replace(/\\n/g, '\n')).serialNumber;
}

describe('certificate rotation', () => {
  let mesh: LocalMesh;
  before(async () => {
    mesh = await LocalMesh.start({
      // Every log line the controller can write, for the key-material check below.
      extraArgs: ['--log-level', 'trace'],
      prepare: async (dir) => {
        const file = path.join(dir, 'meshconfig.yaml');
        const text = await readFile(file, 'utf8');
        await writeFile(file, text.replace(/validity: .*/, `validity: ${VALIDITY_S}s`));
      },
    });
  });
  after(async () => {
    await mesh?.stop();
  });

  test('a rotated service certificate is pushed over SDS before the old one expires', async () => {
    const { credentials, cn } = await proxyCredentials(mesh.stateDir, BUYER);
    const client = adsClient(mesh.ports.ads, credentials);
    const name = 'service-cert:self';
    try {
      client.send({ typeUrl: TypeUrl.Secret, node: { id: cn, cluster: 'x' }, resourceNames: [name] });
      const serials: { serial: string; at: number; notAfter: number }[] = [];
      const deadline = Date.now() + VALIDITY_S * 2500;
      while (Date.now() < deadline && serials.length < 3) {
        const r = await client.next(deadline - Date.now());
        client.ack(r, [name]);
        const msg = r.messages[r.names.indexOf(name)];
        if (!msg) continue;
        const pem =
          JSON.stringify(msg).match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/)?.[0] ?? '';
        const cert = new X509Certificate(pem.replace(/\\n/g, '\n'));
        serials.push({ serial: serialOf(msg), at: Date.now(), notAfter: new Date(cert.validTo).getTime() });
      }
      assert.ok(
        serials.length >= 2,
        `expected a rotation within ${VALIDITY_S * 2.5}s, got ${serials.length} cert(s)`,
      );
      assert.notEqual(serials[0]?.serial, serials[1]?.serial);
      // The new certificate arrived while the previous one was still valid.
      const [first, second] = serials;
      assert.ok(first && second && second.at < first.notAfter + 1000, 'rotated before expiry');
    } finally {
      client.close();
    }
  });

  test('local workload certificate files are rewritten on rotation', async () => {
    const file = path.join(mesh.stateDir, 'workloads', 'bookstore', 'bookstore', 'cert.pem');
    const serial = async () => new X509Certificate(await readFile(file)).serialNumber;
    const first = await serial();
    const deadline = Date.now() + VALIDITY_S * 2000;
    let next = first;
    while (Date.now() < deadline && next === first) {
      await sleep(200);
      next = await serial();
    }
    assert.notEqual(next, first, 'the workload certificate file was not rotated');
  });

  test('no log line of the controller carries key material, at trace level, after issuing and rotating', () => {
    const lines = [...mesh.controller.lines.map((l) => JSON.stringify(l)), ...mesh.controller.stderr];
    assert.ok(lines.length > 20, `only ${lines.length} log lines`);
    assert.ok(
      lines.some((l) => /rotat/i.test(l)),
      'the run rotated certificates (so the check covers issuance and rotation)',
    );
    const leaks = lines.filter((l) => /PRIVATE KEY|BEGIN EC|BEGIN RSA/.test(l));
    assert.deepEqual(leaks, []);
  });
});
