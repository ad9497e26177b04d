// A protobuf writer into one growing buffer. protobufjs's Writer records every
// write as an operation object and copies them all into a new buffer at
// `finish()`: one object per field, ~13 % of the controller's allocations
// while 2,000 proxies converge (its `uint32`, `fork`, `string` and `ldelim`,
// in a sampling allocation profile). Here a write is bytes at a position; a
// nested message reserves one byte for its length, and `ldelim` moves the
// content right when the length needs more (a message of 128 bytes or more).
//
// Not reentrant: one encoding at a time per writer (the encoder's writer is
// module-level, and Node runs one encoding at a time).

const INITIAL_BYTES = 64 * 1024;
const TWO_32 = 4294967296;

/** Bytes of `v` (an unsigned 32-bit value) as a varint. */
function varintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

export class BufferWriter {
  #buf = Buffer.allocUnsafe(INITIAL_BYTES);
  #view = new DataView(this.#buf.buffer, this.#buf.byteOffset, this.#buf.byteLength);
  #pos = 0;
  readonly #forks: number[] = [];

  get length(): number {
    return this.#pos;
  }

  /** Bytes written so far, as a view of the scratch buffer (valid until the next write). */
  view(start = 0, end = this.#pos): Uint8Array {
    return this.#buf.subarray(start, end);
  }

  /** An owned copy of the bytes written, then an empty writer (the scratch buffer is kept). */
  finish(): Uint8Array {
    const out = new Uint8Array(this.#pos);
    out.set(this.#buf.subarray(0, this.#pos));
    this.reset();
    return out;
  }

  reset(): void {
    this.#pos = 0;
    this.#forks.length = 0;
  }

  #ensure(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.#buf.copy(next, 0, 0, this.#pos);
    this.#buf = next;
    this.#view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }

  uint32(v: number): this {
    this.#ensure(5);
    let n = v >>> 0;
    const b = this.#buf;
    while (n > 0x7f) {
      b[this.#pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    b[this.#pos++] = n;
    return this;
  }

  /** int32: a negative value is sign-extended to ten bytes, as protobuf requires. */
  int32(v: number): this {
    return v < 0 ? this.#varint64((v | 0) >>> 0, 0xffffffff) : this.uint32(v);
  }

  sint32(v: number): this {
    return this.uint32(((v << 1) ^ (v >> 31)) >>> 0);
  }

  bool(v: boolean): this {
    this.#ensure(1);
    this.#buf[this.#pos++] = v ? 1 : 0;
    return this;
  }

  fixed32(v: number): this {
    this.#ensure(4);
    this.#view.setUint32(this.#pos, v >>> 0, true);
    this.#pos += 4;
    return this;
  }

  sfixed32(v: number): this {
    this.#ensure(4);
    this.#view.setInt32(this.#pos, v | 0, true);
    this.#pos += 4;
    return this;
  }

  float(v: number): this {
    this.#ensure(4);
    this.#view.setFloat32(this.#pos, v, true);
    this.#pos += 4;
    return this;
  }

  double(v: number): this {
    this.#ensure(8);
    this.#view.setFloat64(this.#pos, v, true);
    this.#pos += 8;
    return this;
  }

  /** int64 and uint64 take a number, a decimal string or a bigint (two's complement for negatives). */
  int64(v: number | string | bigint): this {
    const [lo, hi] = split64(v);
    return this.#varint64(lo, hi);
  }

  uint64(v: number | string | bigint): this {
    return this.int64(v);
  }

  sint64(v: number | string | bigint): this {
    const n = BigInt.asIntN(64, toBigInt(v));
    const zz = BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
    return this.#varint64(Number(zz & 0xffffffffn), Number(zz >> 32n));
  }

  fixed64(v: number | string | bigint): this {
    const [lo, hi] = split64(v);
    this.#ensure(8);
    this.#view.setUint32(this.#pos, lo, true);
    this.#view.setUint32(this.#pos + 4, hi, true);
    this.#pos += 8;
    return this;
  }

  sfixed64(v: number | string | bigint): this {
    return this.fixed64(v);
  }

  string(s: string): this {
    // Reserve one length byte, write the UTF-8, then widen the prefix if the string was long.
    this.#ensure(s.length * 3 + 5);
    const start = this.#pos;
    const n = this.#buf.write(s, start + 1, 'utf8');
    this.#pos = start + 1 + n;
    this.#prefixLength(start, n);
    return this;
  }

  bytes(b: Uint8Array): this {
    this.uint32(b.length);
    this.#ensure(b.length);
    this.#buf.set(b, this.#pos);
    this.#pos += b.length;
    return this;
  }

  /** Starts a length-delimited message; `ldelim` ends it. */
  fork(): this {
    this.#ensure(1);
    this.#forks.push(this.#pos);
    this.#pos += 1;
    return this;
  }

  /** Ends the message `fork` started and writes its length; returns the length. */
  ldelim(): number {
    const start = this.#forks.pop();
    if (start === undefined) throw new Error('ldelim without fork');
    const n = this.#pos - start - 1;
    this.#prefixLength(start, n);
    return n;
  }

  /** Writes length `n` at `start`, where one byte was reserved before `n` bytes of content. */
  #prefixLength(start: number, n: number): void {
    const size = varintSize(n);
    if (size > 1) {
      this.#ensure(size - 1);
      this.#buf.copyWithin(start + size, start + 1, this.#pos);
      this.#pos += size - 1;
    }
    let v = n;
    let at = start;
    const b = this.#buf;
    while (v > 0x7f) {
      b[at++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[at] = v;
  }

  /** A 64-bit varint from its low and high 32 bits (both unsigned). */
  #varint64(lo: number, hi: number): this {
    if (hi === 0) return this.uint32(lo);
    this.#ensure(10);
    const b = this.#buf;
    let l = lo >>> 0;
    let h = hi >>> 0;
    while (h > 0) {
      b[this.#pos++] = (l & 0x7f) | 0x80;
      l = ((l >>> 7) | (h << 25)) >>> 0;
      h >>>= 7;
    }
    while (l > 0x7f) {
      b[this.#pos++] = (l & 0x7f) | 0x80;
      l >>>= 7;
    }
    b[this.#pos++] = l;
    return this;
  }
}

function toBigInt(v: number | string | bigint): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  return BigInt(v.trim());
}

/** A 64-bit integer's two's-complement low and high 32 bits. */
function split64(v: number | string | bigint): [number, number] {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0)
    return [(v % TWO_32) >>> 0, Math.floor(v / TWO_32)];
  const n = BigInt.asUintN(64, toBigInt(v));
  return [Number(n & 0xffffffffn), Number(n >> 32n)];
}
