import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { cluster, cn, endpoints, type Fixture, startFixture } from '../../../test/support/xds/testing.js';
import { TypeUrl } from '../../envoy/types.js';
import { encodeDeltaDiscoveryRequest } from './delta-codec.js';
import {
  DEFAULT_STREAM_LIMITS,
  DELTA_NAME_FIELDS,
  decodeWithin,
  isRefused,
  RequestBudget,
  SOTW_NAME_FIELDS,
  scanRequest,
  streamLimits,
} from './limits.js';
import { decodeDiscoveryRequest, encodeDiscoveryRequest } from './service.js';

const NODE = { id: cn(1), cluster: 'c' };

function sotw(names: string[], typeUrl: string = TypeUrl.ClusterLoadAssignment): Uint8Array {
  return encodeDiscoveryRequest({ versionInfo: '', resourceNames: names, typeUrl, responseNonce: '' });
}

describe('scanRequest', () => {
  const limits = streamLimits({ maxNamesPerType: 3, maxNameLength: 10 });

  test('passes a request within the limits, whatever its other fields hold', () => {
    const bytes = encodeDiscoveryRequest({
      versionInfo: 'v'.repeat(500),
      resourceNames: ['a', 'b', 'c'],
      typeUrl: TypeUrl.Cluster,
      responseNonce: 'n'.repeat(500),
      node: { id: 'x'.repeat(1000), cluster: 'c' },
    });
    assert.equal(scanRequest(bytes, SOTW_NAME_FIELDS, limits), undefined);
  });

  test('counts resource_names: one over the limit is RESOURCE_EXHAUSTED naming it', () => {
    const r = scanRequest(sotw(['a', 'b', 'c', 'd']), SOTW_NAME_FIELDS, limits);
    assert.equal(r?.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(r?.reason, 'too-many-names');
    assert.match(r?.message ?? '', /limit of 3 per type/);
  });

  test('a name longer than the limit is INVALID_ARGUMENT', () => {
    const r = scanRequest(sotw(['a', 'x'.repeat(11)]), SOTW_NAME_FIELDS, limits);
    assert.equal(r?.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(r?.reason, 'name-too-long');
    assert.match(r?.message ?? '', /11 bytes exceeds the limit of 10/);
  });

  test('Delta: subscribe, unsubscribe and initial_resource_versions all count', () => {
    const bytes = encodeDeltaDiscoveryRequest({
      typeUrl: TypeUrl.ClusterLoadAssignment,
      resourceNamesSubscribe: ['a'],
      resourceNamesUnsubscribe: ['b'],
      initialResourceVersions: new Map([
        ['c', '1'],
        ['d', '2'],
      ]),
      responseNonce: '',
    });
    assert.equal(scanRequest(bytes, DELTA_NAME_FIELDS, limits)?.reason, 'too-many-names');
    assert.equal(scanRequest(bytes, DELTA_NAME_FIELDS, streamLimits({ maxNamesPerType: 4 })), undefined);
  });

  test('broken framing is INVALID_ARGUMENT "malformed", never a throw', () => {
    const good = sotw(['abc']);
    for (const bytes of [
      good.subarray(0, good.length - 1), // truncated string
      Uint8Array.of(0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f), // length far past the end
      Uint8Array.of(0x0b), // wire type 3 (group)
      Uint8Array.of(0x00, 0x00), // field 0
      Uint8Array.of(0x08, 0x80), // truncated varint
    ]) {
      const r = scanRequest(bytes, SOTW_NAME_FIELDS, limits);
      assert.equal(r?.code, grpc.status.INVALID_ARGUMENT, Buffer.from(bytes).toString('hex'));
      assert.match(r?.message ?? '', /^malformed DiscoveryRequest: /);
    }
  });

  test('decodeWithin decodes what passes and refuses what does not', () => {
    const ok = decodeWithin(sotw(['a']), SOTW_NAME_FIELDS, limits, decodeDiscoveryRequest);
    assert.ok(!isRefused(ok));
    assert.deepEqual(ok.resourceNames, ['a']);
    const over = decodeWithin(sotw(['a', 'b', 'c', 'd']), SOTW_NAME_FIELDS, limits, decodeDiscoveryRequest);
    assert.ok(isRefused(over));
  });
});

describe('RequestBudget', () => {
  test('a burst of twice the rate, then the rate; RESOURCE_EXHAUSTED naming the limit beyond', () => {
    let now = 0;
    const b = new RequestBudget(streamLimits({ requestsPerSecond: 5 }), () => now);
    for (let i = 0; i < 10; i++) assert.equal(b.take(1), undefined, `request ${i}`);
    const over = b.take(1);
    assert.equal(over?.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(over?.reason, 'request-rate');
    assert.match(over?.message ?? '', /more than 5 requests per second/);
    now += 200; // one token back
    assert.equal(b.take(1), undefined);
    assert.equal(b.take(1)?.reason, 'request-rate');
  });

  test('names are charged too: the name rate bounds large requests', () => {
    let now = 0;
    const b = new RequestBudget(streamLimits({ namesPerSecond: 1000, maxNamesPerType: 100 }), () => now);
    assert.equal(b.take(1000), undefined);
    assert.equal(b.take(1)?.reason, 'name-rate');
    now += 500;
    assert.equal(b.take(500), undefined);
  });

  test('defaults let a large real proxy through: 10 full SotW ACKs of 10,000 EDS names a second', () => {
    let now = 0;
    const b = new RequestBudget(DEFAULT_STREAM_LIMITS, () => now);
    for (let s = 0; s < 30; s++) {
      for (let i = 0; i < 10; i++) assert.equal(b.take(10_000), undefined, `second ${s} ack ${i}`);
      now += 1000;
    }
  });

  test('streamLimits refuses a limit that is not a positive integer', () => {
    assert.throws(() => streamLimits({ maxNamesPerType: 0 }), /maxNamesPerType must be a positive integer/);
    assert.throws(() => streamLimits({ requestsPerSecond: 1.5 }), /requestsPerSecond/);
  });
});

describe('AdsServer stream limits', () => {
  let f: Fixture;
  before(async () => {
    f = await startFixture({
      limits: { maxNamesPerType: 5, maxNameLength: 20, requestsPerSecond: 10, maxMessageBytes: 64 * 1024 },
    });
    f.source.set(TypeUrl.Cluster, [cluster('a')]);
    f.source.set(TypeUrl.ClusterLoadAssignment, [endpoints('a', '10.0.0.1')]);
  });
  after(() => f.close());

  const ended = async (status: Promise<grpc.StatusObject>, code: grpc.status, details: RegExp) => {
    const s = await status;
    assert.equal(s.code, code, `${grpc.status[s.code]}: ${s.details}`);
    assert.match(s.details, details);
  };

  test('SotW: more names than the limit ends the stream with RESOURCE_EXHAUSTED, nothing answered', async () => {
    const c = await f.client(cn(11));
    c.send({
      typeUrl: TypeUrl.ClusterLoadAssignment,
      node: NODE,
      resourceNames: ['a', 'b', 'c', 'd', 'e', 'f'],
    });
    await ended(c.status, grpc.status.RESOURCE_EXHAUSTED, /6 resource names exceed the limit of 5 per type/);
    assert.deepEqual(await c.drain(50), []);
  });

  test('SotW: a name over the length limit is INVALID_ARGUMENT', async () => {
    const c = await f.client(cn(12));
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, node: NODE, resourceNames: ['y'.repeat(21)] });
    await ended(c.status, grpc.status.INVALID_ARGUMENT, /21 bytes exceeds the limit of 20/);
  });

  test('Delta: subscriptions add up over requests; the one that crosses the limit ends the stream', async () => {
    const c = await f.deltaClient(cn(13));
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, node: NODE, resourceNamesSubscribe: ['a', 'b', 'c'] });
    const first = await c.next();
    assert.deepEqual(first.names, ['a']);
    c.ack(first);
    c.send({ typeUrl: TypeUrl.ClusterLoadAssignment, resourceNamesSubscribe: ['d', 'e', 'f'] });
    await ended(
      c.status,
      grpc.status.RESOURCE_EXHAUSTED,
      /6 resource names for .*ClusterLoadAssignment exceed/,
    );
  });

  test('a flood of requests ends the stream with RESOURCE_EXHAUSTED naming the request rate', async () => {
    const c = await f.client(cn(14));
    c.send({ typeUrl: TypeUrl.Cluster, node: NODE });
    for (let i = 0; i < 40; i++) c.send({ typeUrl: 'type.googleapis.com/unknown', responseNonce: `${i}` });
    await ended(c.status, grpc.status.RESOURCE_EXHAUSTED, /more than 10 requests per second on one stream/);
  });

  test('a message over the receive size is RESOURCE_EXHAUSTED from gRPC, and the server carries on', async () => {
    const c = await f.client(cn(15));
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: 'n'.repeat(70 * 1024), cluster: 'c' } });
    await ended(c.status, grpc.status.RESOURCE_EXHAUSTED, /larger than max/);
    const d = await f.client(cn(16));
    d.send({ typeUrl: TypeUrl.Cluster, node: NODE });
    assert.deepEqual((await d.next()).names, ['a']);
  });

  test('every refused stream is gone from the server', async () => {
    const deadline = Date.now() + 2000;
    // The last test's proxy is still connected.
    while (f.server.streamCount > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(f.server.streamCount, 1);
    assert.equal(f.source.connected.size, 1);
  });
});
