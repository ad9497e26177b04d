import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cluster, cn, type Fixture, startFixture } from '../../../test/support/xds/testing.js';
import { TypeUrl } from '../../envoy/types.js';

// ~200 KB per CDS response: bigger than the HTTP/2 windows, so a client that
// stops reading makes the server's writes stall.
function bigClusterSet(round: number) {
  return Array.from({ length: 400 }, (_, i) => cluster(`c${i}-${'x'.repeat(500)}`, round));
}

describe('ADS back-pressure', () => {
  let f: Fixture;
  before(async () => {
    f = await startFixture({ maxBufferedBytes: 64 * 1024 });
  });
  after(() => f.close());

  it('a stream that does not read gets one coalesced push, not a queue of every change', async () => {
    f.source.set(TypeUrl.Cluster, bigClusterSet(1));
    const c = await f.client(cn(1));
    c.send({ typeUrl: TypeUrl.Cluster });
    const first = await c.next();
    c.ack(first);
    c.pause();
    const before = f.source.generateCalls.get(TypeUrl.Cluster) ?? 0;
    for (let round = 2; round <= 80; round++) {
      f.source.set(TypeUrl.Cluster, bigClusterSet(round));
      f.source.push();
      await new Promise((r) => setTimeout(r, 5));
    }
    // Blocked: later pushes did not even generate.
    const generated = (f.source.generateCalls.get(TypeUrl.Cluster) ?? 0) - before;
    assert.ok(generated < 30, `generated ${generated} times while the stream was blocked`);
    c.resume();
    const received = [];
    for (;;) {
      const r = await c.next(1000);
      received.push(r);
      if (r.messages[0]?.['connect_timeout'] !== undefined) {
        const t = r.messages[0]['connect_timeout'];
        if (typeof t === 'object' && t !== null && !Array.isArray(t) && t['seconds'] === 80) break;
      }
    }
    assert.ok(received.length < 30, `received ${received.length} responses for 79 changes`);
    assert.deepEqual(await c.drain(), []);
  });
});

describe('Delta ADS back-pressure', () => {
  let f: Fixture;
  before(async () => {
    f = await startFixture({ maxBufferedBytes: 64 * 1024 });
  });
  after(() => f.close());

  it('a delta stream that does not read gets one coalesced push of the latest versions', async () => {
    f.source.set(TypeUrl.Cluster, bigClusterSet(1));
    const c = await f.deltaClient(cn(2));
    c.send({ typeUrl: TypeUrl.Cluster });
    c.ack(await c.next());
    c.pause();
    const before = f.source.generateCalls.get(TypeUrl.Cluster) ?? 0;
    for (let round = 2; round <= 80; round++) {
      f.source.set(TypeUrl.Cluster, bigClusterSet(round));
      f.source.push();
      await new Promise((r) => setTimeout(r, 5));
    }
    const generated = (f.source.generateCalls.get(TypeUrl.Cluster) ?? 0) - before;
    assert.ok(generated < 30, `generated ${generated} times while the stream was blocked`);
    c.resume();
    const received = [];
    for (;;) {
      const r = await c.next(1000);
      received.push(r);
      const t = r.messages[0]?.['connect_timeout'];
      if (typeof t === 'object' && t !== null && !Array.isArray(t) && t['seconds'] === 80) break;
    }
    assert.ok(received.length < 30, `received ${received.length} responses for 79 changes`);
    // The last response carries every cluster in its latest version.
    assert.equal(received.at(-1)?.names.length, 400);
    assert.deepEqual(await c.drain(), []);
  });
});
