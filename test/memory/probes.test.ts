import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENVOY_NEWEST, hasEnvoy } from '../support/envoy-bin.js';
import { measureEnvoyFront } from './envoy-front-probe.js';
import { measureDirect, probePems, TRANSPORTS } from './probe-client.js';

// The per-connection probes behind docs/performance.md's floor figures, in miniature: every
// server holds every client (measureDirect and measureEnvoyFront throw otherwise) and the
// figures are read. Their sizes are not asserted: a handful of connections says nothing about
// per-connection memory; the point is that the tools still run.
describe('connection probes', () => {
  it('each bare server (tcp, tls, h2, grpc-js) holds every client that sent its message and ACK', async () => {
    const pems = await probePems();
    for (const t of TRANSPORTS) {
      const m = await measureDirect(t, 61_000, 8, pems);
      assert.ok(Number.isFinite(m.kb) && m.cpuMs > 0, `${t}: ${JSON.stringify(m)}`);
    }
  });

  it("an Envoy in front of an h2c server carries every client's stream to it", {
    skip: hasEnvoy(ENVOY_NEWEST) ? false : `envoy ${ENVOY_NEWEST} missing (make envoy-bin)`,
  }, async () => {
    const f = await measureEnvoyFront(8, 61_000, 1, await probePems());
    assert.ok(f.envoy.cpuMs > 0 && Number.isFinite(f.envoy.kb), JSON.stringify(f));
    assert.ok(Number.isFinite(f.behind.kb), JSON.stringify(f));
  });
});
