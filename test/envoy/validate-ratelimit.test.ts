// Listeners and routes carrying local rate limits (UpstreamTrafficSetting
// rateLimit.local and httpRoutes) pass Envoy's own validation rules: the
// protos' rules (test/envoyvalidate) and each Envoy binary's `--mode
// validate`, which also builds the filters (the HTTP local_ratelimit's
// per-route configs included) as a running sidecar would; mesh, ingress and
// permissive plaintext chains.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fetchSidecarConfig } from '../support/envoy/fetch.js';
import { ingressObjects } from '../support/envoy/ingress.js';
import { bookstoreObjects, proxyFor, storeOf, viewOf } from '../support/envoy/mesh.js';
import { upstreamSetting } from '../support/envoy/upstream.js';
import { ENVOY_VERSIONS, envoyValidate, hasEnvoy } from '../support/envoy-bin.js';
import { bootstrapJson, issueMeshCertificates, staticBootstrap } from '../support/envoy-static.js';
import { ENVOYVALIDATE_BIN, encodeResources, validateWithEnvoy } from '../support/envoy-validate.js';

// envoyvalidate links the local_ratelimit types since main.go imports them;
// an older binary (make rebuilds it when main.go changes) cannot unpack them.
const mtime = (file: string) => statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? 0;
const staleValidator =
  mtime(ENVOYVALIDATE_BIN) < mtime(path.join(path.dirname(ENVOYVALIDATE_BIN), '..', 'main.go'))
    ? 'test/envoyvalidate/bin is older than its main.go: make envoyvalidate-bin'
    : false;

const setting = upstreamSetting;

const headers = Array.from({ length: 10 }, (_, i) => ({ name: `x-limit-${i}`, value: `v${i}` }));
const SETTINGS = [
  setting('bookstore', 'bookstore-v1', {
    rateLimit: {
      local: {
        tcp: { connections: 100, unit: 'second', burst: 10 },
        http: {
          requests: 4294967290,
          unit: 'hour',
          burst: 5,
          responseStatusCode: 511,
          responseHeadersToAdd: headers,
        },
      },
    },
    httpRoutes: [
      { path: '/books-bought', rateLimit: { local: { requests: 1, unit: 'minute' } } },
      {
        path: '^.*a-book.*new',
        rateLimit: { local: { requests: 2, unit: 'second', responseStatusCode: 400 } },
      },
    ],
  }),
  // Per-route only (no service bucket), on the gRPC port; TCP-only on the database port.
  setting('bookwarehouse', 'bookwarehouse', {
    rateLimit: { local: { tcp: { connections: 1, unit: 'hour' } } },
    httpRoutes: [{ path: '/skein.Echo/.*', rateLimit: { local: { requests: 7, unit: 'second' } } }],
  }),
];
const PODS = ['bookstore-v1-1', 'bookwarehouse-1'] as const;
const IDENTITIES = ['bookstore/bookstore-v1', 'bookwarehouse/bookwarehouse'];

/** SMI mode with IngressBackends (ingress chains), and permissive mode (plaintext chains). */
function configs(secrets: Parameters<typeof fetchSidecarConfig>[1]['secrets']) {
  return [ingressObjects(), bookstoreObjects({ permissive: true })].flatMap((objects) => {
    const mesh = viewOf(storeOf([...objects, ...SETTINGS]));
    return PODS.map((pod) => ({ pod, res: fetchSidecarConfig(proxyFor(mesh, pod), { mesh, secrets }) }));
  });
}

test("listeners and routes with local rate limits pass the protos' validation rules", {
  skip: staleValidator,
}, async () => {
  const issued = await issueMeshCertificates(IDENTITIES, 'cluster.local');
  const all = configs(issued.secrets).flatMap(({ res }) => [...res.listeners, ...res.routes]);
  const json = JSON.stringify(all.map((r) => r.message));
  for (const field of [
    'envoy.filters.network.local_ratelimit',
    'envoy.filters.http.local_ratelimit',
    'token_bucket',
  ])
    assert.ok(json.includes(field), `${field} missing`);
  assert.deepEqual(await validateWithEnvoy(encodeResources(all, 'rate limits')), []);
});

for (const version of ENVOY_VERSIONS)
  test(`Envoy ${version} --mode validate builds the rate-limit filters`, {
    skip: !hasEnvoy(version),
  }, async () => {
    const issued = await issueMeshCertificates(IDENTITIES, 'cluster.local');
    for (const { pod, res } of configs(issued.secrets)) {
      const { code, output } = await envoyValidate(
        version,
        bootstrapJson(staticBootstrap(res, { adminPort: 0 })),
        {
          logLevel: 'warning',
        },
      );
      assert.equal(code, 0, `${pod}: ${output}`);
      assert.doesNotMatch(output, /deprecated/i, pod);
    }
  });
