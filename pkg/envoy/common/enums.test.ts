import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envoyRoot } from '../../xds/proto/root.js';
import { ENUMS_BY_PROTO_NAME } from './enums.js';

test('every numeric enum constant matches the Envoy protos', () => {
  for (const [protoName, values] of Object.entries(ENUMS_BY_PROTO_NAME)) {
    const protoEnum = envoyRoot().lookupEnum(protoName);
    for (const [name, value] of Object.entries(values)) {
      assert.equal(protoEnum.values[name], value, `${protoName}.${name}`);
    }
  }
});
