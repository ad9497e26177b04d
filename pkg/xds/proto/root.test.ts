import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envoyRoot, messageType } from './root.js';

test('options keep their values after their strings are copied out of the .proto texts', () => {
  const cluster = messageType('type.googleapis.com/envoy.config.cluster.v3.Cluster');
  assert.equal(
    cluster.options?.['(udpa.annotations.versioning).previous_message_type'],
    'envoy.api.v2.Cluster',
  );
  assert.equal(cluster.fields['name']?.options?.['(validate.rules).string.min_len'], 1);
  // Field options that change the wire format survive too: proto3 repeated scalars stay packed.
  assert.equal(
    messageType('envoy.config.route.v3.RetryPolicy').fields['retriable_status_codes']?.packed,
    true,
  );
  assert.equal(
    messageType('envoy.config.core.v3.HeaderValueOption').fullName,
    '.envoy.config.core.v3.HeaderValueOption',
  );
  assert.equal(envoyRoot(), envoyRoot(), 'loaded once');
});
