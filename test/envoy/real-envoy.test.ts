// The real Envoy (each version `make envoy-bin` fetches) on what skein
// generates for the bookstore mesh, as static configuration
// (test/support/envoy-static.ts): every sidecar configuration loads without a
// deprecated field. Skipped for a version whose binary is missing.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { fetchSidecarConfig } from '../../pkg/envoy/testing/fetch.js';
import { bookstoreVariants, POD_NAMES, proxyFor } from '../../pkg/envoy/testing/mesh.js';
import {
  bootstrapJson,
  ENVOY_VERSIONS,
  envoyBinary,
  envoyValidate,
  type IssuedMesh,
  issueMeshCertificates,
  staticBootstrap,
} from '../support/envoy-static.js';

const TRUST_DOMAIN = 'cluster.local';
const IDENTITIES = [
  'bookbuyer/bookbuyer',
  'bookthief/bookthief',
  'bookstore/bookstore-v1',
  'bookstore/bookstore-v2',
  'bookwarehouse/bookwarehouse',
  'bookwarehouse/mysql',
];

for (const version of ENVOY_VERSIONS) {
  const bin = envoyBinary(version);
  const skip = bin === undefined ? `no Envoy ${version}: run \`make envoy-bin\`` : false;

  describe(`Envoy ${version} on skein's sidecar configuration`, { skip }, () => {
    // Real certificates: Envoy parses every PEM it is given.
    let issued: IssuedMesh;

    before(async () => {
      issued = await issueMeshCertificates(IDENTITIES, TRUST_DOMAIN);
    });

    test('every sidecar configuration loads in validate mode, without a deprecated field', async () => {
      if (!bin) return;
      for (const [mode, mesh] of bookstoreVariants()) {
        for (const pod of POD_NAMES) {
          const res = fetchSidecarConfig(proxyFor(mesh, pod), { mesh, secrets: issued.secrets });
          const { code, output } = await envoyValidate(
            bin,
            bootstrapJson(staticBootstrap(res, { adminPort: 0 })),
          );
          assert.equal(code, 0, `${mode} ${pod}: ${output}`);
          assert.doesNotMatch(output, /deprecated/i, `${mode} ${pod}`);
        }
      }
    });
  });
}
