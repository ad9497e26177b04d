import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CONTROLLER_USAGE, parseControllerArgs, UsageError } from './options.js';

test('defaults follow OSM ports; the plaintext port is off unless asked for', () => {
  const o = parseControllerArgs(['--local', 'examples/bookstore']);
  assert.notEqual(o, 'help');
  if (o === 'help') return;
  assert.equal(o.adsPort, 15128);
  assert.equal(o.httpPort, 9091);
  assert.equal(o.insecureAdsPort, undefined);
  assert.equal(o.meshName, 'skein');
});

test('flags are parsed and validated', () => {
  const o = parseControllerArgs([
    '--local',
    'd',
    '--insecure-ads-port',
    '15129',
    '--min-push-interval',
    '250ms',
  ]);
  assert.ok(o !== 'help');
  assert.equal(o.insecureAdsPort, 15129);
  assert.equal(o.minPushIntervalMs, 250);
  assert.throws(
    () => parseControllerArgs(['--local', 'd', '--ads-port', 'x']),
    /--ads-port: "x" is not a port/,
  );
  assert.throws(() => parseControllerArgs(['--local', 'd', '--min-push-interval', '5']), UsageError);
  assert.throws(() => parseControllerArgs(['--bogus']), UsageError);
  assert.equal(parseControllerArgs(['--help']), 'help');
});

test('Kubernetes mode: --kubeconfig, or in-cluster when neither source is given inside a pod', () => {
  const k = parseControllerArgs(['--kubeconfig', '/k/config', '--mesh-name', 'm', '--namespace', 'cp'], {});
  assert.ok(k !== 'help');
  assert.equal(k.kubeconfig, '/k/config');
  assert.equal(k.localDir, undefined);
  assert.equal(k.inCluster, undefined);
  assert.equal(k.meshName, 'm');
  assert.equal(k.namespace, 'cp');

  const pod = parseControllerArgs([], { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
  assert.ok(pod !== 'help');
  assert.equal(pod.inCluster, true);
  assert.equal(pod.namespace, 'skein-system');

  // --local wins over being in a pod; local mode is unchanged.
  const local = parseControllerArgs(['--local', 'd'], { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
  assert.ok(local !== 'help');
  assert.equal(local.localDir, 'd');
  assert.equal(local.inCluster, undefined);

  assert.throws(() => parseControllerArgs([], {}), /--local <dir> or --kubeconfig <path>/);
  assert.throws(() => parseControllerArgs(['--local', 'd', '--kubeconfig', 'k'], {}), /exclude each other/);
  assert.throws(() => parseControllerArgs(['--kubeconfig', ''], {}), UsageError);
});

test('--workload-files is off unless given', () => {
  const off = parseControllerArgs(['--kubeconfig', '/k/config'], {});
  assert.ok(off !== 'help');
  assert.equal(off.workloadFiles, undefined);
  const on = parseControllerArgs(['--kubeconfig', '/k/config', '--workload-files'], {});
  assert.ok(on !== 'help');
  assert.equal(on.workloadFiles, true);
});

test('webhook flags: on at 9090 in Kubernetes mode, off in local mode unless given; names default per mesh', () => {
  const k = parseControllerArgs(['--kubeconfig', '/k', '--mesh-name', 'blue'], {});
  assert.ok(k !== 'help');
  assert.equal(k.webhookPort, 9090);
  assert.equal(k.webhookConfigName, 'skein-sidecar-injector-blue');
  assert.equal(k.serviceName, 'skein-controller');
  assert.equal(k.caSecret, 'skein-ca');
  assert.equal(k.envoyImage, 'envoyproxy/envoy:v1.40.0');
  assert.match(k.initImage, /^skein\/init:/);
  assert.deepEqual(k.extraSans, []);

  const pod = parseControllerArgs([], { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
  assert.ok(pod !== 'help');
  assert.equal(pod.webhookPort, 9090);

  const local = parseControllerArgs(['--local', 'd']);
  assert.ok(local !== 'help');
  assert.equal(local.webhookPort, undefined);

  const all = parseControllerArgs(
    [
      '--local',
      'd',
      '--webhook-port=0',
      '--webhook-config-name=hooks',
      '--service-name',
      'ctl',
      '--envoy-image',
      'e:1',
      '--init-image',
      'i:2',
      '--ca-secret',
      'my-ca',
      '--extra-san',
      '127.0.0.1',
      '--extra-san',
      'skein.example.com',
      '--extra-san',
      '::1',
    ],
    {},
  );
  assert.ok(all !== 'help');
  assert.equal(all.webhookPort, 0);
  assert.equal(all.webhookConfigName, 'hooks');
  assert.equal(all.serviceName, 'ctl');
  assert.equal(all.envoyImage, 'e:1');
  assert.equal(all.initImage, 'i:2');
  assert.equal(all.caSecret, 'my-ca');
  assert.deepEqual(all.extraSans, ['127.0.0.1', 'skein.example.com', '::1']);

  assert.equal(all.bootstrapOrphanGraceMs, undefined);
  const grace = parseControllerArgs(['--kubeconfig', 'k', '--bootstrap-orphan-grace', '2s'], {});
  assert.ok(grace !== 'help');
  assert.equal(grace.bootstrapOrphanGraceMs, 2000);
  assert.throws(
    () => parseControllerArgs(['--kubeconfig', 'k', '--bootstrap-orphan-grace', 'soon']),
    /--bootstrap-orphan-grace/,
  );

  assert.throws(() => parseControllerArgs(['--local', 'd', '--webhook-port', '70000']), /--webhook-port/);
  assert.throws(() => parseControllerArgs(['--local', 'd', '--extra-san', 'not a name']), /--extra-san/);
  assert.throws(
    () => parseControllerArgs(['--local', 'd', '--ca-secret', '']),
    /--ca-secret: must not be empty/,
  );
});

test('--debug is off unless given; --rest-xds-port defaults to 15127 in Kubernetes mode, off in local mode', () => {
  const k = parseControllerArgs(['--kubeconfig', '/k'], {});
  assert.ok(k !== 'help');
  assert.equal(k.debug, undefined);
  assert.equal(k.restXdsPort, 15127);
  const pod = parseControllerArgs([], { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
  assert.ok(pod !== 'help');
  assert.equal(pod.restXdsPort, 15127);
  const local = parseControllerArgs(['--local', 'd'], {});
  assert.ok(local !== 'help');
  assert.equal(local.restXdsPort, undefined);
  const given = parseControllerArgs(['--local', 'd', '--debug', '--rest-xds-port', '0'], {});
  assert.ok(given !== 'help');
  assert.equal(given.debug, true);
  assert.equal(given.restXdsPort, 0);
  assert.throws(
    () => parseControllerArgs(['--kubeconfig', '/k', '--rest-xds-port', 'x'], {}),
    /--rest-xds-port/,
  );
});

test('ADS stream limits: unset unless given, each flag a positive integer', () => {
  const none = parseControllerArgs(['--local', 'd'], {});
  assert.ok(none !== 'help');
  assert.equal(none.adsLimits, undefined);
  const given = parseControllerArgs(
    [
      '--local',
      'd',
      '--ads-max-names',
      '50000',
      '--ads-request-rate',
      '20',
      '--ads-max-message-bytes',
      '8388608',
    ],
    {},
  );
  assert.ok(given !== 'help');
  assert.deepEqual(given.adsLimits, {
    maxNamesPerType: 50_000,
    requestsPerSecond: 20,
    maxMessageBytes: 8_388_608,
  });
  for (const bad of ['0', '1.5', 'many'])
    assert.throws(
      () => parseControllerArgs(['--local', 'd', '--ads-name-rate', bad], {}),
      (e: unknown) =>
        e instanceof UsageError && /--ads-name-rate: .* is not a positive integer/.test(e.message),
    );
});

test('--native-sidecars: auto by default, always|never, anything else a UsageError; in the help text', () => {
  const mode = (...flags: string[]) => {
    const o = parseControllerArgs(['--kubeconfig', 'k', ...flags], {});
    assert.ok(o !== 'help');
    return o.nativeSidecars;
  };
  assert.equal(mode(), 'auto');
  assert.equal(mode('--native-sidecars', 'always'), 'always');
  assert.equal(mode('--native-sidecars=never'), 'never');
  assert.equal(mode('--native-sidecars', 'auto'), 'auto');
  for (const bad of ['true', 'Always', ''])
    assert.throws(() => mode('--native-sidecars', bad), {
      name: 'UsageError',
      message: `--native-sidecars: ${JSON.stringify(bad)} is not one of auto, always, never`,
    });
  const local = parseControllerArgs(['--local', 'd'], {});
  assert.ok(local !== 'help');
  assert.equal(local.nativeSidecars, 'auto', 'local mode resolves auto to classic at start (injection.ts)');
  assert.match(CONTROLLER_USAGE, /--native-sidecars <mode> +auto\|always\|never/);
  assert.match(CONTROLLER_USAGE, /skein\.dev\/native-sidecar/);
});

test('leader election: on by default in Kubernetes mode with client-go timings, off in local mode or with --leader-elect=false', () => {
  const kube = parseControllerArgs(['--kubeconfig', 'k']);
  assert.ok(kube !== 'help');
  assert.deepEqual(kube.leaderElection, {
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
  });
  const local = parseControllerArgs(['--local', 'dir']);
  assert.ok(local !== 'help');
  assert.equal(local.leaderElection, undefined);
  const off = parseControllerArgs(['--kubeconfig', 'k', '--leader-elect', 'false']);
  assert.ok(off !== 'help');
  assert.equal(off.leaderElection, undefined);
  const fast = parseControllerArgs([
    ...['--kubeconfig', 'k', '--leader-elect-lease-duration', '3s'],
    ...['--leader-elect-renew-deadline', '2s', '--leader-elect-retry-period', '500ms'],
  ]);
  assert.ok(fast !== 'help');
  assert.deepEqual(fast.leaderElection, { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 });
  assert.throws(
    () => parseControllerArgs(['--kubeconfig', 'k', '--leader-elect', 'yes']),
    /not true or false/,
  );
  assert.throws(
    () => parseControllerArgs(['--kubeconfig', 'k', '--leader-elect-renew-deadline', '20s']),
    /renew-deadline must be shorter than --leader-elect-lease-duration/,
  );
  assert.throws(
    () => parseControllerArgs(['--kubeconfig', 'k', '--leader-elect-retry-period', '9s']),
    /retry-period .* must be shorter than --leader-elect-renew-deadline/,
  );
});
