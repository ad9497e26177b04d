// The secret matrix: every way a proxy can ask for a secret over ADS (SotW
// and Delta, by name, a wildcard, a re-subscription, a reconnect claiming to
// hold one) for names it must never get — another identity's key (a service
// it may call included), another identity's validation context, the ingress
// gateway's TLS keys, a CA key or any name skein does not issue. It receives
// only its own key and validation contexts; each refusal is counted by reason
// (skein_xds_refused_total). REST xDS: test/e2e/rest-xds.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bookstoreMesh, proxyFor } from '../../../test/support/envoy/mesh.js';
import { type Fixture, MeshSource, startFixture } from '../../../test/support/xds/testing.js';
import type { ProtoObject } from '../../envoy/types.js';
import { TypeUrl } from '../../envoy/types.js';

/** The name every proxy's listeners and clusters reference: the stream's own identity's key. */
const SELF = 'service-cert:self';
/** OSM's name for bookbuyer's key: answered to bookbuyer only, referenced by nothing. */
const OWN = 'service-cert:bookbuyer/bookbuyer';
/** Names bookbuyer may never have, with the reason the server gives. */
const FORBIDDEN: [string, string][] = [
  ['service-cert:bookstore/bookstore-v1', 'other-identity'], // a service it may call: its key, no
  ['service-cert:bookthief/bookthief', 'other-identity'],
  ['root-cert-for-mtls-inbound:bookstore/bookstore-v1', 'other-identity'],
  ['root-cert-for-mtls-ingress:bookstore/bookstore-v1', 'other-identity'],
  ['ingress-tls:bookstore/shop-tls', 'not-gateway'],
  ['skein-ca', 'unknown-name'],
  ['ca.key', 'unknown-name'],
  ['service-cert', 'unknown-name'],
];

/** Every private key in a list of Secret messages, by secret name. */
function keysIn(messages: ProtoObject[]): string[] {
  const out: string[] = [];
  for (const m of messages) {
    const tls = m['tls_certificate'];
    if (typeof tls === 'object' && tls !== null && 'private_key' in tls) out.push(String(m['name']));
  }
  return out;
}

describe('the secret matrix: a proxy gets only its own identity’s secrets, however it asks', () => {
  const mesh = bookstoreMesh();
  const buyer = proxyFor(mesh, 'bookbuyer-1');
  let f: Fixture<MeshSource>;
  const refused: string[] = [];
  before(async () => {
    f = await startFixture({
      source: new MeshSource(mesh),
      observer: { onResourceRefused: (typeUrl, reason) => refused.push(`${typeUrl} ${reason}`) },
    });
  });
  after(() => f.close());

  const expectRefusals = (n = 1) =>
    FORBIDDEN.flatMap(([, reason]) => Array.from({ length: n }, () => `${TypeUrl.Secret} ${reason}`)).sort();

  it('SotW: by name, again with more names, and "*" — only its own key, each forbidden name counted once', async () => {
    refused.length = 0;
    const c = await f.client(buyer.identity.cn);
    try {
      const names = [...FORBIDDEN.map(([n]) => n), OWN, SELF];
      c.send({
        typeUrl: TypeUrl.Secret,
        node: { id: buyer.identity.cn, cluster: 'x' },
        resourceNames: names,
      });
      const r = await c.next();
      assert.deepEqual(r.names, [OWN, SELF]);
      assert.deepEqual(keysIn(r.messages), [OWN, SELF]);
      // An ACK repeating the same names is no new request: not counted again.
      c.ack(r, names);
      // "*" is no wildcard for SDS (xDS rule 6): a name like any other, which skein never issues.
      c.send({
        typeUrl: TypeUrl.Secret,
        versionInfo: r.versionInfo,
        responseNonce: r.nonce,
        resourceNames: [...names, '*'],
      });
      for (const later of await c.drain()) assert.deepEqual(keysIn(later.messages), [OWN, SELF]);
      assert.deepEqual(refused.sort(), expectRefusals());
    } finally {
      c.close();
    }
  });

  it(`"${SELF}" is each caller's own key: two identities asking for it get their own certificates`, async () => {
    const chains = new Map<string, string>();
    for (const pod of ['bookbuyer-1', 'bookthief-1'] as const) {
      const cn = proxyFor(mesh, pod).identity.cn;
      for (const delta of [false, true]) {
        const c = delta ? await f.deltaClient(cn) : await f.client(cn);
        try {
          const sub = delta ? { resourceNamesSubscribe: [SELF] } : { resourceNames: [SELF] };
          c.send({ typeUrl: TypeUrl.Secret, node: { id: cn, cluster: 'x' }, ...sub });
          const r = await c.next();
          assert.deepEqual(r.names, [SELF]);
          const chain = JSON.stringify(r.messages[0]?.['tls_certificate']);
          const known = chains.get(pod);
          if (known === undefined) chains.set(pod, chain);
          else assert.equal(chain, known, `${pod}: the same key over SotW and Delta`);
        } finally {
          c.close();
        }
      }
    }
    assert.match(chains.get('bookbuyer-1') ?? '', /bookbuyer\/bookbuyer/);
    assert.match(chains.get('bookthief-1') ?? '', /bookthief\/bookthief/);
    assert.doesNotMatch(chains.get('bookthief-1') ?? '', /bookbuyer/);
  });

  it('SotW: a first request with no names gets nothing (SDS has no wildcard)', async () => {
    const c = await f.client(buyer.identity.cn);
    try {
      c.send({ typeUrl: TypeUrl.Secret, node: { id: buyer.identity.cn, cluster: 'x' }, resourceNames: [] });
      for (const r of await c.drain()) assert.deepEqual(r.names, []);
    } finally {
      c.close();
    }
  });

  it('Delta: by name, re-subscribed, and on a reconnect claiming to hold them — only its own key, counted', async () => {
    refused.length = 0;
    const forbidden = FORBIDDEN.map(([n]) => n);
    const c = await f.deltaClient(buyer.identity.cn);
    try {
      c.send({
        typeUrl: TypeUrl.Secret,
        node: { id: buyer.identity.cn, cluster: 'x' },
        resourceNamesSubscribe: [...forbidden, OWN],
      });
      const r = await c.next();
      assert.deepEqual(r.names, [OWN]);
      assert.deepEqual(keysIn(r.messages), [OWN]);
      c.ack(r);
      // Already subscribed: no new refusal, and still nothing sent.
      c.send({ typeUrl: TypeUrl.Secret, resourceNamesSubscribe: forbidden });
      assert.deepEqual(await c.drain(), []);
    } finally {
      c.close();
    }
    const again = await f.deltaClient(buyer.identity.cn);
    try {
      again.send({
        typeUrl: TypeUrl.Secret,
        node: { id: buyer.identity.cn, cluster: 'x' },
        resourceNamesSubscribe: forbidden,
        initialResourceVersions: new Map(forbidden.map((n) => [n, 'x'])),
      });
      const r = await again.next();
      assert.deepEqual(r.names, []);
      // "You hold nothing valid by these names."
      assert.deepEqual([...r.removedResources].sort(), [...forbidden].sort());
    } finally {
      again.close();
    }
    assert.deepEqual(refused.sort(), expectRefusals(2));
  });

  it('the outbound trust bundle is not a refusal: served with the CA alone (no key)', async () => {
    refused.length = 0;
    const c = await f.client(buyer.identity.cn);
    try {
      const outbound = 'root-cert-for-mtls-outbound';
      c.send({
        typeUrl: TypeUrl.Secret,
        node: { id: buyer.identity.cn, cluster: 'x' },
        resourceNames: [outbound],
      });
      const r = await c.next();
      assert.deepEqual(r.names, [outbound]);
      assert.deepEqual(keysIn(r.messages), []);
      assert.deepEqual(refused, []);
    } finally {
      c.close();
    }
  });

  it('a proxyless gRPC client (certificates from files, gRFC A29) gets no secret over SDS, its own name included', async () => {
    refused.length = 0;
    const cn = buyer.identity.cn.replace('.sidecar.', '.grpc.');
    const c = await f.client(cn);
    try {
      c.send({
        typeUrl: TypeUrl.Secret,
        node: { id: cn, cluster: 'x' },
        resourceNames: [OWN, SELF, 'ca.key'],
      });
      for (const r of await c.drain()) assert.deepEqual(r.names, []);
      assert.deepEqual(refused, Array(3).fill(`${TypeUrl.Secret} no-sds`));
    } finally {
      c.close();
    }
  });
});
