import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import { BufferWriter } from './buffer-writer.js';

/** The same writes through protobufjs's Writer and through BufferWriter, compared byte for byte. */
type Ops = (w: {
  uint32(v: number): unknown;
  int32(v: number): unknown;
  sint32(v: number): unknown;
  int64(v: number | string): unknown;
  sint64(v: number | string): unknown;
  fixed64(v: number | string): unknown;
  fixed32(v: number): unknown;
  sfixed32(v: number): unknown;
  float(v: number): unknown;
  double(v: number): unknown;
  bool(v: boolean): unknown;
  string(v: string): unknown;
  bytes(v: Uint8Array): unknown;
  fork(): unknown;
  ldelim(): unknown;
}) => void;

function same(ops: Ops, where: string): void {
  const reference = protobuf.Writer.create();
  ops(reference as unknown as Parameters<Ops>[0]);
  const ours = new BufferWriter();
  ops(ours as unknown as Parameters<Ops>[0]);
  assert.deepEqual(Buffer.from(ours.finish()), Buffer.from(reference.finish()), where);
}

test('varints, signed and zigzag values at every length boundary', () => {
  const edges = [0, 1, 127, 128, 16383, 16384, 2097151, 2097152, 268435455, 268435456, 4294967295];
  for (const v of edges) same((w) => w.uint32(v), `uint32 ${v}`);
  for (const v of [0, 1, -1, -128, 2147483647, -2147483648]) {
    same((w) => w.int32(v), `int32 ${v}`);
    same((w) => w.sint32(v), `sint32 ${v}`);
    same((w) => w.sfixed32(v), `sfixed32 ${v}`);
  }
  for (const v of [0, 1, -1, 4294967296, 9007199254740991, -9007199254740991, '9007199254740993', '-5']) {
    same((w) => w.int64(v), `int64 ${v}`);
    same((w) => w.sint64(v), `sint64 ${v}`);
    same((w) => w.fixed64(v), `fixed64 ${v}`);
  }
  same((w) => w.fixed32(4294967295), 'fixed32');
  same((w) => w.float(1.5), 'float');
  same((w) => w.double(-0.1), 'double');
  same((w) => w.bool(true), 'bool');
});

test('strings and nested messages whose length needs more than the one byte reserved', () => {
  for (const s of [
    '',
    'a',
    'é',
    'x'.repeat(127),
    'x'.repeat(128),
    'ü'.repeat(64),
    '日本'.repeat(3000),
    '🙂'.repeat(5000),
  ])
    same((w) => w.string(s), `string of ${s.length} UTF-16 units`);
  same((w) => w.bytes(new Uint8Array(300).fill(7)), 'bytes');
  // Depth and size: each level's content crosses 128 and 16384 bytes, and the buffer grows past 64 KB.
  same((w) => {
    w.fork();
    w.string('outer');
    for (let i = 0; i < 3; i++) {
      w.uint32(10);
      w.fork();
      w.string('y'.repeat(100 * (i + 1)));
      w.uint32(18);
      w.fork();
      w.bytes(new Uint8Array(20_000 * (i + 1)));
      w.ldelim();
      w.ldelim();
    }
    w.fork();
    w.ldelim();
    w.ldelim();
  }, 'nested');
});

test('ldelim returns the content length, and view shows it where the writer stands', () => {
  const w = new BufferWriter();
  w.uint32(10).fork().string('abc');
  const n = w.ldelim();
  assert.equal(n, 4);
  assert.deepEqual([...w.view(w.length - n)], [3, 97, 98, 99]);
  assert.throws(() => w.ldelim(), /ldelim without fork/);
  w.reset();
  assert.equal(w.finish().length, 0);
});
