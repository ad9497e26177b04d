import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type protobuf from 'protobufjs';
import type { ProtoObject } from '../../envoy/types.js';
import { decodeMessage, encodeMessage } from './codec.js';
import { messageType } from './root.js';

const STDOUT = 'type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog';
const ACCESS_LOG = 'envoy.config.accesslog.v3.AccessLog';

function stdoutLog(path: string): ProtoObject {
  return {
    name: 'envoy.access_loggers.stdout',
    typed_config: { '@type': STDOUT, log_format: { text_format_source: { inline_string: path } } },
  };
}

// The Any packed by hand: the payload encoded on its own, then type_url + value.
function packedByHand(path: string): Uint8Array {
  const inner = messageType(STDOUT);
  const value = inner
    .encode(inner.fromObject({ log_format: { text_format_source: { inline_string: path } } }))
    .finish();
  const outer = messageType(ACCESS_LOG);
  return outer
    .encode(
      outer.fromObject({ name: 'envoy.access_loggers.stdout', typed_config: { type_url: STDOUT, value } }),
    )
    .finish();
}

describe('the Any wrapper', () => {
  it('packs an Any as protobufjs does, and decodes back', () => {
    const bytes = encodeMessage(ACCESS_LOG, stdoutLog('%START_TIME%\n'));
    assert.deepEqual(Buffer.from(bytes), Buffer.from(packedByHand('%START_TIME%\n')));
    const back = decodeMessage(ACCESS_LOG, bytes);
    assert.deepEqual(back['typed_config'], {
      '@type': STDOUT,
      log_format: { text_format_source: { inline_string: '%START_TIME%\n' } },
    });
  });

  it('packs a frozen Any once, and re-encodes one that is not frozen after a change', () => {
    const anyType = messageType('google.protobuf.Any');
    const frozen = Object.freeze({ '@type': STDOUT });
    assert.equal(anyType.fromObject(frozen), anyType.fromObject(frozen), 'the same packed message');
    const open: { '@type': string; log_format?: unknown } = { '@type': STDOUT };
    const before = Buffer.from(anyType.encode(anyType.fromObject(open)).finish());
    open.log_format = { text_format_source: { inline_string: 'x' } };
    const after = Buffer.from(anyType.encode(anyType.fromObject(open)).finish());
    assert.notDeepEqual(after, before);
  });

  it('leaves an Any without @type or of an unknown type as protobufjs leaves it', () => {
    const anyType = messageType('google.protobuf.Any');
    const plain = anyType.fromObject({
      type_url: STDOUT,
      value: new Uint8Array([1, 2]),
    }) as protobuf.Message & {
      type_url?: string;
      value?: Uint8Array;
    };
    assert.equal(plain.type_url, STDOUT);
    assert.deepEqual([...(plain.value ?? [])], [1, 2]);
    const unknown = anyType.fromObject({
      '@type': 'type.googleapis.com/no.such.Type',
    }) as protobuf.Message & {
      type_url?: string;
    };
    assert.equal(unknown.type_url ?? '', '');
  });
});
