// A minimal reproduction, without skein's controller, of a @grpc/grpc-js-xds
// 1.14 behaviour skein must work around (issue 12, item 4): an XdsServer whose
// Listener is removed stops serving, as it should, but when the same Listener
// comes back byte-identical it does not serve again; a Listener with changed
// content does. The test asserts that behaviour as it is, so an upgrade that
// fixes it fails here and the workaround can be revisited.
//
// The server runs in its own process (test/apps/workload.ts) against a stub
// ADS server (test/support/stub-ads.ts) that the test drives.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { AnyType, ExtName, socketAddress, typed } from '../../pkg/envoy/common/xds.js';
import { TypeUrl } from '../../pkg/envoy/types.js';
import { encodeResource } from '../../pkg/xds/cache/encoded.js';
import { freePorts, type JsonLineProcess, sleep, spawnNode } from '../support/processes.js';
import { StubAdsServer } from '../support/stub-ads.js';

const workload = fileURLToPath(new URL('../apps/workload.js', import.meta.url));
const WHO = '/skein.test.Echo/Who';
const IP = '127.0.0.31';

/** A plaintext server Listener; `statPrefix` is the content a "change" changes. */
function serverListener(port: number, statPrefix: string) {
  const name = `grpc/server?xds.resource.listening_address=${IP}:${port}`;
  return encodeResource({
    name,
    typeUrl: TypeUrl.Listener,
    message: {
      name,
      address: socketAddress(IP, port),
      filter_chains: [
        {
          filters: [
            {
              name: ExtName.HttpConnectionManager,
              typed_config: typed(AnyType.HttpConnectionManager, {
                stat_prefix: statPrefix,
                route_config: {
                  name: 'inbound',
                  virtual_hosts: [
                    {
                      name: 'inbound',
                      domains: ['*'],
                      routes: [{ match: { prefix: '/' }, non_forwarding_action: {} }],
                    },
                  ],
                },
                http_filters: [{ name: ExtName.Router, typed_config: typed(AnyType.Router) }],
              }),
            },
          ],
        },
      ],
    },
  });
}

describe('grpc-js-xds 1.14: a server Listener removed and re-sent unchanged', () => {
  const ads = new StubAdsServer();
  let dir = '';
  let server: JsonLineProcess | undefined;
  let client: grpc.Client | undefined;
  let port = 0;

  /** How many of `n` plaintext calls to the server succeed. */
  async function served(n = 5): Promise<number> {
    let ok = 0;
    for (let i = 0; i < n; i++) {
      const res = await new Promise<boolean>((resolve) =>
        client?.makeUnaryRequest(
          WHO,
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(0),
          new grpc.Metadata(),
          { deadline: Date.now() + 1000 },
          (err) => resolve(!err),
        ),
      );
      if (res) ok++;
    }
    return ok;
  }

  async function eventuallyServed(want: (ok: number) => boolean, what: string): Promise<number> {
    const deadline = Date.now() + 8000;
    let ok = -1;
    while (Date.now() < deadline) {
      ok = await served();
      if (want(ok)) return ok;
      await sleep(200);
    }
    throw new Error(`${what}: ${ok} of 5 calls succeeded`);
  }

  before(async () => {
    const adsPort = await ads.start();
    [port = 0] = await freePorts(1);
    dir = await mkdtemp(path.join(tmpdir(), 'skein-readd-'));
    const bootstrap = path.join(dir, 'bootstrap.json');
    await writeFile(
      bootstrap,
      JSON.stringify({
        xds_servers: [
          {
            server_uri: `127.0.0.1:${adsPort}`,
            channel_creds: [{ type: 'insecure' }],
            server_features: ['xds_v3'],
          },
        ],
        node: { id: 'repro', cluster: 'repro', locality: {} },
        server_listener_resource_name_template: 'grpc/server?xds.resource.listening_address=%s',
      }),
    );
    ads.pushSotw(TypeUrl.Listener, [serverListener(port, 'first')]);
    server = spawnNode('xds server', workload, ['server', '--name', 'repro', '--listen', `${IP}:${port}`], {
      GRPC_XDS_BOOTSTRAP: bootstrap,
    });
    await server.waitFor((l) => l['type'] === 'listening', 20_000);
    client = new grpc.Client(`${IP}:${port}`, grpc.credentials.createInsecure());
  });

  after(async () => {
    client?.close();
    await server?.stop();
    ads.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('serves, stops when the Listener goes, stays stopped on an identical re-send, serves on a changed one', async () => {
    await eventuallyServed((ok) => ok === 5, 'serving with its Listener');
    ads.pushSotw(TypeUrl.Listener, []);
    await eventuallyServed((ok) => ok === 0, 'not serving without a Listener');
    ads.pushSotw(TypeUrl.Listener, [serverListener(port, 'first')]);
    await sleep(2000);
    // The library behaviour skein works around; if this fails, grpc-js-xds fixed it.
    assert.equal(await served(), 0, 'an identical re-send made the server serve again: the library changed');
    ads.pushSotw(TypeUrl.Listener, [serverListener(port, 'second')]);
    await eventuallyServed((ok) => ok === 5, 'serving again on a changed Listener');
  });
});
