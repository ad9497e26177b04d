import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseControllerArgs, UsageError } from './options.js';

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
