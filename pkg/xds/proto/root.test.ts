import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envoyProtoRoot, envoyRoot, messageType } from './root.js';

test('the runtime root holds the messages skein writes, loaded once, without what it never writes', () => {
  assert.equal(envoyRoot(), envoyRoot(), 'loaded once');
  assert.equal(
    messageType('envoy.config.core.v3.HeaderValueOption').fullName,
    '.envoy.config.core.v3.HeaderValueOption',
  );
  // Proto3 repeated scalars stay packed without the options they came with.
  assert.equal(
    messageType('envoy.config.route.v3.RetryPolicy').fields['retriable_status_codes']?.packed,
    true,
  );
  // The bootstrap is the injector's YAML, never encoded here: only the parsed protos have it.
  assert.throws(() => envoyRoot().lookupType('envoy.config.bootstrap.v3.Bootstrap'), /no such type/);
  assert.ok(envoyProtoRoot().lookupType('envoy.config.bootstrap.v3.Bootstrap'));
});

test('the parsed protos keep their options', () => {
  const cluster = envoyProtoRoot().lookupType('envoy.config.cluster.v3.Cluster');
  assert.equal(
    cluster.options?.['(udpa.annotations.versioning).previous_message_type'],
    'envoy.api.v2.Cluster',
  );
  assert.equal(cluster.fields['name']?.options?.['(validate.rules).string.min_len'], 1);
});
