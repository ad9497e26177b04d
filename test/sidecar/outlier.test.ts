// UpstreamTrafficSetting outlierDetection.failurePercentage through a real Envoy
// sidecar (consecutive-error ejection is proven in resilience.test.ts): the
// caller's sidecar ejects `pct-bad`, which fails three of every four requests
// (never five in a row, so Envoy's default consecutive_5xx of 5 cannot be what
// ejects it), and keeps `pct-good`. Envoy's own counter says which rule ejected.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/kube-registry-fixture.js';
import type { RunningPod } from '../support/pod-runner.js';
import { callerAndPair, HTTP_PORT, type MeshClient, SidecarMesh, sidecarSuiteSkipReason } from './mesh.js';

const sfx = randomBytes(3).toString('hex');
const skip = await sidecarSuiteSkipReason();

describe('outlier detection by failure percentage through a real Envoy sidecar', {
  skip,
  timeout: 300_000,
}, () => {
  let mesh: SidecarMesh;
  let callerPod: RunningPod;
  let caller: MeshClient;
  const url = `http://pct:${HTTP_PORT}/work`;
  /** The caller's outlier-detection counters for its cluster to `pct`. */
  const outlierStats = async () => {
    const stats = await callerPod.envoyStats('outlier_detection');
    const out: Record<string, number> = {};
    for (const [k, v] of stats) {
      const m = new RegExp(`/pct\\|${HTTP_PORT}\\.outlier_detection\\.(\\w+)$`).exec(k);
      if (m?.[1]) out[m[1]] = v;
    }
    return out;
  };

  before(async () => {
    mesh = await SidecarMesh.start(`od${sfx}`);
    ({ callerPod, caller } = await callerAndPair(
      mesh,
      'pct',
      { good: [], bad: ['--fail-ratio', '0.75'] },
      (c) => (c['200 pct-good'] ?? 0) > 0 && (c['500 pct-bad'] ?? 0) > 0,
    ));
  });

  after(async () => {
    await caller?.close();
    await mesh?.stop();
  });

  test('failurePercentage 50: the pod failing 75 % is ejected by that rule, then every call succeeds', async () => {
    const before = await caller.http(url, 40);
    const failedBefore = before.counts['500 pct-bad'] ?? 0;
    // Round robin: the bad pod gets half the calls and fails three of four of them.
    assert.ok(failedBefore >= 8 && failedBefore <= 20, JSON.stringify(before));
    await mesh.apply('policy.skein.dev', 'v1alpha1', 'upstreamtrafficsettings', {
      apiVersion: 'policy.skein.dev/v1alpha1',
      kind: 'UpstreamTrafficSetting',
      metadata: { name: 'pct', namespace: mesh.namespace },
      spec: {
        host: `pct.${mesh.namespace}.svc.cluster.local`,
        outlierDetection: {
          interval: '1s',
          baseEjectionTime: '60s',
          maxEjectionPercent: 50,
          failurePercentage: { threshold: 50, minimumHosts: 2, requestVolume: 5 },
        },
      },
    });
    const applied = Date.now();
    // A cluster change: in force once Envoy has warmed the rebuilt cluster (15 s, docs/policy.md).
    let stats: Record<string, number> = {};
    await eventually(
      'pct-bad is ejected by failure percentage',
      async () => {
        await caller.http(url, 20);
        stats = await outlierStats();
        assert.equal(stats['ejections_active'], 1, JSON.stringify(stats));
      },
      60_000,
    );
    const tookMs = Date.now() - applied;
    assert.ok((stats['ejections_enforced_failure_percentage'] ?? 0) >= 1, JSON.stringify(stats));
    assert.equal(stats['ejections_enforced_consecutive_5xx'] ?? 0, 0, JSON.stringify(stats));
    const afterwards = await caller.http(url, 200);
    assert.deepEqual(afterwards.counts, { '200 pct-good': 200 });
    console.log(
      `sidecar failurePercentage 50 (interval 1s, requestVolume 5): ${failedBefore}/40 failed before; pct-bad ejected ${tookMs} ms after the apply (cluster warm-up included), ejections_enforced_failure_percentage ${stats['ejections_enforced_failure_percentage']}, ejections_enforced_consecutive_5xx ${stats['ejections_enforced_consecutive_5xx'] ?? 0}; then 200/200 on pct-good`,
    );
  });
});
