#!/usr/bin/env node
// Records the Node a real Envoy sends on its first ADS request, for the
// benchmark fleet (envoy-node.ts). Run on demand, after a build, when the Envoy
// version changes:
//
//   node dist/test/bench/capture-node.js [--version 1.40.0] [--out FILE]
//
// It starts a stub ADS server on 127.0.0.1 (test/support/stub-ads.ts), runs
// test/envoybin/bin/envoy-<version> on the injector's sidecar bootstrap made
// loopback (plaintext ADS to the stub, ports picked by the kernel), takes the
// Node of the first DiscoveryRequest, and writes it as JSON (default
// test/bench/fixtures/envoy-<version>-node.json). Envoy runs without hot
// restart, so it creates nothing in /dev/shm.
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { controllerAddress, envoyBootstrap } from '../../pkg/injector/bootstrap.js';
import type { Json } from '../../pkg/injector/pod.js';
import { messageType } from '../../pkg/xds/proto/root.js';
import { ENVOY_VERSIONS, EnvoyProcess, type EnvoyVersion, loopbackBootstrap } from '../support/envoy-bin.js';
import { StubAdsServer } from '../support/stub-ads.js';
import { NODE_FIXTURE_VERSION, NODE_TYPE, type NodeFixture, nodeFixturePath } from './envoy-node.js';

function isEnvoyVersion(v: string): v is EnvoyVersion {
  return ENVOY_VERSIONS.some((x) => x === v);
}

async function captureNode(version: EnvoyVersion): Promise<NodeFixture> {
  const stub = new StubAdsServer();
  try {
    const port = await stub.start();
    // The sidecar bootstrap as the injector writes it: the node's id and cluster are the
    // only parts it sets, the rest (extensions, build version, features) is the binary's.
    const bootstrap: Json = JSON.parse(
      JSON.stringify(
        envoyBootstrap({
          nodeId: '00000000-0000-4000-8000-000000000000.sidecar.capture.capture.cluster.local',
          nodeCluster: 'capture.capture',
          controller: controllerAddress('skein-system'),
        }),
      ),
    );
    const run = await EnvoyProcess.start(version, JSON.stringify(loopbackBootstrap(bootstrap, port)), {
      logLevel: 'warning',
    });
    try {
      await stub.waitFor((reqs) => reqs.some((r) => r.node !== undefined));
    } finally {
      await run.stop();
    }
    const first = stub.requests.find((r) => r.node !== undefined);
    if (!first?.node) throw new Error('no request carried a node');
    const type = messageType(NODE_TYPE);
    const node = type.toObject(type.decode(first.node), { longs: String, enums: String, bytes: String });
    return { envoyVersion: version, capturedBytes: first.node.length, node };
  } finally {
    stub.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { version: { type: 'string' }, out: { type: 'string' } },
    strict: true,
  });
  const version = values.version ?? NODE_FIXTURE_VERSION;
  if (!isEnvoyVersion(version)) throw new Error(`--version: one of ${ENVOY_VERSIONS.join(', ')}`);
  const fixture = await captureNode(version);
  const out = values.out ?? nodeFixturePath(version);
  await writeFile(out, `${JSON.stringify(fixture, null, 2)}\n`);
  const extensions = fixture.node['extensions'];
  process.stdout.write(
    `${out}: Envoy ${version}, Node ${fixture.capturedBytes} bytes, ${Array.isArray(extensions) ? extensions.length : 0} extensions\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`capture-node: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
