import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import type { ProtoObject } from '../../pkg/envoy/types.js';
import { differences } from './compare.js';

const T = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const held = (m: Record<string, ProtoObject>) => new Map([[T, new Map(Object.entries(m))]]);

test('reports a resource on one side only and a content difference, and nothing for equal content', () => {
  const a = { name: 'a', connect_timeout: '1s', nested: { x: [1, 2] } };
  // Key order is not content.
  const aReordered = { nested: { x: [1, 2] }, connect_timeout: '1s', name: 'a' };
  assert.deepEqual(differences(held({ a }), held({ a: aReordered })), []);
  const out = differences(
    held({ a, b: { name: 'b' } }),
    held({ a: { ...a, nested: { x: [2, 1] } }, c: { name: 'c' } }),
  );
  assert.equal(out.length, 3, out.join('\n'));
  assert.match(out[0] ?? '', /^Cluster a: content differs/);
  assert.match(out[1] ?? '', /^Cluster b: only the live controller serves it/);
  assert.match(out[2] ?? '', /^Cluster c: only the fresh controller serves it/);
});

test('leaf certificates compare by identity and issuer, keys not at all, the CA by fingerprint', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'skein-oracle-compare-'));
  const other = await mkdtemp(path.join(tmpdir(), 'skein-oracle-compare-'));
  try {
    const ca = await BuiltinCA.loadOrCreate(dir);
    const issue = (ns: string) =>
      ca.issue({
        commonName: `web.${ns}.cluster.local`,
        uriSans: [`spiffe://cluster.local/ns/${ns}/sa/web`],
        validityMs: 3_600_000,
        usage: 'client',
      });
    const secret = async (ns: string, root = ca.rootCertPem) => {
      const c = await issue(ns);
      return {
        name: 's',
        tls_certificate: {
          certificate_chain: { inline_bytes: Buffer.from(c.certPem).toString('base64') },
          private_key: { inline_string: c.keyPem },
        },
        validation_context: { trusted_ca: { inline_string: root } },
      };
    };
    // Reissued for the same identity: new key and serial, same identity.
    assert.deepEqual(differences(held({ s: await secret('shop') }), held({ s: await secret('shop') })), []);
    assert.equal(differences(held({ s: await secret('shop') }), held({ s: await secret('pay') })).length, 1);
    const otherRoot = (await BuiltinCA.loadOrCreate(other)).rootCertPem;
    assert.equal(
      differences(held({ s: await secret('shop') }), held({ s: await secret('shop', otherRoot) })).length,
      1,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(other, { recursive: true, force: true });
  }
});
