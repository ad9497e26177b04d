import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import { envoyProtoRoot, envoyRoot } from '../../xds/proto/root.js';
import { descriptorTypes, renderDescriptor } from './descriptor.js';
import { DESCRIPTOR_PATH, skeinDescriptor } from './skein.js';

const PROTO = `
syntax = "proto3";
package a.v3;
import "validate.proto";
message Top {
  message Inner { int64 n = 1; }
  enum Kind { ZERO = 0; ONE = 1; }
  string name = 1 [(validate.rules).string.min_len = 1];
  repeated uint32 codes = 2;
  repeated uint32 loose = 3 [packed = false];
  map<string, Inner> by_name = 4;
  Kind kind = 5;
  google.protobuf.Any payload = 6;
  oneof choice { uint32 x = 7; string y = 8; }
}
message Payload { string s = 1; }
message Unreached { string s = 1; }
`;
const ANY = `
syntax = "proto3";
package google.protobuf;
message Any { string type_url = 1; bytes value = 2; }
`;
const OLD = `
syntax = "proto2";
package c;
message Old { repeated int32 n = 1; }
`;

function tinyRoot(): protobuf.Root {
  const root = new protobuf.Root();
  for (const text of [PROTO, ANY, OLD]) protobuf.parse(text, root, { keepCase: true });
  root.resolveAll();
  return root;
}

test('the descriptor keeps what the roots reach, Any and its payload roots, and no options but packing', () => {
  const full = tinyRoot();
  assert.deepEqual([...descriptorTypes(full, ['a.v3.Top', 'a.v3.Payload', 'c.Old'])].sort(), [
    'a.v3.Payload',
    'a.v3.Top',
    'a.v3.Top.Inner',
    'a.v3.Top.Kind',
    'c.Old',
    'google.protobuf.Any',
  ]);
  const text = renderDescriptor(full, ['a.v3.Top', 'a.v3.Payload', 'c.Old']);
  assert.doesNotMatch(text, /Unreached|validate|min_len/);
  const pruned = protobuf.Root.fromJSON(JSON.parse(text) as protobuf.INamespace);
  pruned.resolveAll();
  const top = pruned.lookupType('a.v3.Top');
  assert.equal(top.fields['codes']?.packed, true, 'proto3 repeated scalars pack');
  assert.equal(top.fields['loose']?.packed, false, 'an explicit [packed = false] stays');
  assert.equal(pruned.lookupType('c.Old').fields['n']?.packed, false, 'proto2 does not pack by default');
  assert.deepEqual(top.oneofs['choice']?.oneof, ['x', 'y']);
  assert.equal((top.fields['by_name'] as protobuf.MapField | undefined)?.keyType, 'string');
  // The same bytes as from the parsed protos.
  const msg = { name: 'n', codes: [1, 300], loose: [2, 3], by_name: { k: { n: 5 } }, kind: 1, x: 9 };
  assert.deepEqual(
    top.encode(top.fromObject(msg)).finish(),
    full.lookupType('a.v3.Top').encode(full.lookupType('a.v3.Top').fromObject(msg)).finish(),
  );
  assert.throws(() => pruned.lookupType('a.v3.Unreached'), /no such type/);
});

test('the committed protos/envoy-descriptor.json is what the generator writes today', () => {
  const committed = readFileSync(new URL(`../../../../${DESCRIPTOR_PATH}`, import.meta.url), 'utf8');
  // On failure: npx tsc -p tsconfig.json && node dist/cmd/envoy-api-gen/main.js
  assert.ok(committed === skeinDescriptor(), `${DESCRIPTOR_PATH} is stale: run cmd/envoy-api-gen`);
});

/** A field as the wire sees it, its type by full name. */
function wireShape(f: protobuf.Field): string {
  f.resolve();
  const rt = f.resolvedType;
  const type = rt ? rt.fullName : f.type;
  const key = f instanceof protobuf.MapField ? `map<${f.keyType}>` : '';
  return `${f.id} ${f.repeated ? 'repeated ' : ''}${f.repeated ? (f.packed ? 'packed ' : 'expanded ') : ''}${key}${type} ${f.partOf?.name ?? ''}`;
}

test('every type of the runtime descriptor has the wire shape of the parsed Envoy protos', () => {
  const full = envoyProtoRoot();
  let types = 0;
  const walk = (ns: protobuf.NamespaceBase): void => {
    for (const o of ns.nestedArray) {
      if (o instanceof protobuf.Type) {
        types++;
        const original = full.lookupType(o.fullName);
        assert.deepEqual(
          o.fieldsArray.map(wireShape),
          original.fieldsArray.map(wireShape),
          `fields of ${o.fullName}`,
        );
      } else if (o instanceof protobuf.Enum) {
        assert.deepEqual(
          { ...o.values },
          { ...full.lookupEnum(o.fullName).values },
          `values of ${o.fullName}`,
        );
      }
      if (o instanceof protobuf.Namespace || o instanceof protobuf.Type) walk(o);
    }
  };
  walk(envoyRoot());
  assert.ok(types > 300, `${types} message types`);
  // Validation rules and other options stay behind in the .proto files.
  assert.equal(envoyRoot().lookupType('envoy.config.cluster.v3.Cluster').fields['name']?.options, undefined);
});
