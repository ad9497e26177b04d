import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seriesValue } from '../../test/support/metrics.js';
import { cluster, cn, FakeSource, type Fixture, startFixture } from '../../test/support/xds/testing.js';
import { TypeUrl } from '../envoy/types.js';
import { MeshMetrics } from './metrics.js';

/** A FakeSource whose pushes carry the time of the change behind them, as the repeater's do. */
class TimedSource extends FakeSource {
  changedAt: number | undefined;

  override onPush(streamId: string, push: (changedAt?: number) => void): () => void {
    return super.onPush(streamId, () => push(this.changedAt));
  }
}

/** Polls an async metric value until it equals `expected`, then asserts it (for a clear message). */
async function settlesAt(read: () => Promise<number>, expected: number): Promise<void> {
  let last = await read();
  const deadline = Date.now() + 2000;
  while (last !== expected && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
    last = await read();
  }
  assert.equal(last, expected);
}

describe('metrics through a real ADS server', () => {
  let f: Fixture<TimedSource>;
  let metrics: MeshMetrics;
  const value =
    (name: string, labels: Record<string, string> = {}) =>
    () =>
      seriesValue(metrics, name, labels);
  const connected = value('skein_proxies_connected', { kind: 'sidecar' });
  const pushes = value('skein_xds_pushes_total', { type: 'Cluster' });
  const nacks = value('skein_xds_nacks_total', { type: 'Cluster' });
  const acks = value('skein_xds_change_to_ack_seconds_count', { type: 'Cluster' });
  const ackSeconds = value('skein_xds_change_to_ack_seconds_sum', { type: 'Cluster' });

  before(async () => {
    metrics = new MeshMetrics({ processMetrics: false });
    f = await startFixture({ source: new TimedSource(), observer: metrics.xdsObserver });
  });
  after(() => f.close());

  it('SotW: connect → change → NACK → disconnect', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('a')]);
    const c = await f.client(cn(1));
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(1), cluster: 'x' } });
    const r1 = await c.next();
    await settlesAt(connected, 1);
    assert.equal(await pushes(), 1);
    assert.equal(await acks(), 0); // not ACKed yet

    c.ack(r1);
    await settlesAt(acks, 1);
    // Timed from the request it answered: well under the 5 s of the change below.
    assert.ok((await ackSeconds()) < 1);

    // A change announced 5 s ago: its ACK is timed from the change, not from the send.
    f.source.changedAt = Date.now() - 5000;
    f.source.set(TypeUrl.Cluster, [cluster('a'), cluster('b')]);
    f.source.push();
    const r2 = await c.next();
    assert.equal(await pushes(), 2);
    c.ack(r2);
    await settlesAt(acks, 2);
    const sum = await ackSeconds();
    assert.ok(sum >= 5 && sum < 7, `sum ${sum}`);
    assert.equal(await value('skein_xds_change_to_ack_seconds_bucket', { type: 'Cluster', le: '2.5' })(), 1);

    // A change the proxy rejects: one more push, one NACK, no ACK observed.
    f.source.changedAt = undefined;
    f.source.set(TypeUrl.Cluster, [cluster('c')]);
    f.source.push();
    const r3 = await c.next();
    assert.equal(await pushes(), 3);
    c.send({
      typeUrl: TypeUrl.Cluster,
      versionInfo: r2.versionInfo,
      responseNonce: r3.nonce,
      errorDetail: { code: 3, message: 'rejected' },
    });
    await settlesAt(nacks, 1);
    assert.equal(await acks(), 2);
    // A stale ACK (an old nonce, rule 2) times nothing.
    c.ack(r1);
    assert.deepEqual(await c.drain(), []);
    assert.equal(await acks(), 2);

    c.close();
    await settlesAt(connected, 0);
    assert.equal(await pushes(), 3);
    assert.equal(await nacks(), 1);
  });

  it('Delta: pushes, ACK timing and NACKs are counted the same way', async () => {
    f.source.set(TypeUrl.Cluster, [cluster('d')]);
    const before = { pushes: await pushes(), acks: await acks(), nacks: await nacks() };
    const c = await f.deltaClient(cn(2));
    c.send({ typeUrl: TypeUrl.Cluster, node: { id: cn(2), cluster: 'x' } });
    const r1 = await c.next();
    await settlesAt(connected, 1);
    assert.equal(await pushes(), before.pushes + 1);
    c.ack(r1);
    await settlesAt(acks, before.acks + 1);

    f.source.set(TypeUrl.Cluster, [cluster('d'), cluster('e')]);
    f.source.push();
    const r2 = await c.next();
    assert.equal(await pushes(), before.pushes + 2);
    c.nack(r2, 'rejected');
    await settlesAt(nacks, before.nacks + 1);
    assert.equal(await acks(), before.acks + 1);

    c.close();
    await settlesAt(connected, 0);
  });
});
