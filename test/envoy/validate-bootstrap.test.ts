// The Envoy bootstrap the injector writes for a sidecar (and the file-based SDS
// resources next to it) passes Envoy's own validation rules.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  adsSdsFiles,
  BOOTSTRAP_TYPE_URL,
  controllerAddress,
  DISCOVERY_RESPONSE_TYPE_URL,
  envoyBootstrap,
} from '../../pkg/injector/bootstrap.js';
import { encodeMessage } from '../../pkg/xds/proto/codec.js';
import { fromObjectForm } from '../support/envoy/json-form.js';
import { encodeParsed } from '../support/envoy/proto-types.js';
import { type EncodedResource, validateWithEnvoy } from '../support/envoy-validate.js';

const probes = {
  http: [
    { listenerPort: 15901, path: '/skein-probe/app/liveness', targetPort: 8080, targetPath: '/healthz' },
  ],
  tcp: [{ listenerPort: 15904, targetPort: 8443 }],
};

test("the injector's sidecar bootstrap and SDS files pass Envoy's validation rules", async () => {
  const bootstraps: EncodedResource[] = (['sotw', 'delta'] as const).map((xdsTransport) => {
    const bootstrap = envoyBootstrap({
      nodeId: '6d1f3c58-0b0e-4c8a-9a43-3f6f0c2b9a11.sidecar.bookbuyer.bookbuyer.cluster.local',
      nodeCluster: 'bookbuyer.bookbuyer',
      controller: controllerAddress('skein-system'),
      probes,
      xdsTransport,
      maxDownstreamConnections: 1000,
      // The native layout's Envoy readiness listener, in one of the two.
      envoyReadiness: xdsTransport === 'delta',
    });
    return {
      typeUrl: BOOTSTRAP_TYPE_URL,
      // Envoy reads the bootstrap as proto3 JSON: its Durations are strings there.
      bytes: encodeParsed(BOOTSTRAP_TYPE_URL, fromObjectForm(BOOTSTRAP_TYPE_URL, bootstrap)),
      label: `bootstrap ${xdsTransport}`,
    };
  });
  const sds = adsSdsFiles();
  const violations = await validateWithEnvoy([
    ...bootstraps,
    {
      typeUrl: DISCOVERY_RESPONSE_TYPE_URL,
      bytes: encodeMessage(DISCOVERY_RESPONSE_TYPE_URL, sds.cert),
      label: 'sds cert',
    },
    {
      typeUrl: DISCOVERY_RESPONSE_TYPE_URL,
      bytes: encodeMessage(DISCOVERY_RESPONSE_TYPE_URL, sds.ca),
      label: 'sds ca',
    },
  ]);
  assert.deepEqual(violations, []);
});
