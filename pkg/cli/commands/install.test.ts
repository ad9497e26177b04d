import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageError } from '../errors.js';
import { imageValues } from './install.js';

test('install --image: repository and tag of the controller image (the init image follows it)', () => {
  assert.deepEqual(imageValues('registry.example:5000/skein/controller:0.1.0'), {
    images: { controller: { repository: 'registry.example:5000/skein/controller', tag: '0.1.0' } },
  });
  assert.deepEqual(imageValues('docker.io/skein/controller:0.1.0'), {
    images: { controller: { repository: 'docker.io/skein/controller', tag: '0.1.0' } },
  });
  // A registry port is not a tag: no tag means the chart's appVersion.
  assert.deepEqual(imageValues('localhost:5000/skein'), {
    images: { controller: { repository: 'localhost:5000/skein', tag: '' } },
  });
  assert.throws(() => imageValues('skein@sha256:ab'), UsageError);
  assert.throws(() => imageValues('skein:'), UsageError);
});
