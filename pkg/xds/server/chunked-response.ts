// A response kept as its parts until grpc-js puts it on the wire. A SotW
// response is a few bytes of envelope around pre-encoded resources the cache
// shares between proxies; joining them into one Buffer per response allocated
// a fresh buffer the size of the response (hundreds of KB per CDS response in
// permissive mode) that lived only until grpc-js copied it into its own frame.
// grpc-js does that copy at once: ServerInterceptingCall.serializeMessage
// calls the method's responseSerialize and copies its result into a new
// `length + 5` Buffer before returning (@grpc/grpc-js 1.14,
// server-interceptors.ts). So every response is joined into one reused
// scratch buffer, which is free again as soon as responseSerialize returns.
// chunked-response.test.ts checks this through a real grpc-js server: a burst
// written under back-pressure (sent long after it was written) arrives intact.

/** An encoded message held as its chunks, in order. */
export class ChunkedResponse {
  readonly byteLength: number;

  constructor(private readonly chunks: readonly Uint8Array[]) {
    let n = 0;
    for (const c of chunks) n += c.length;
    this.byteLength = n;
  }

  /** The message in a Buffer of its own (REST, tests, tools). */
  toBuffer(): Buffer {
    return Buffer.concat(this.chunks, this.byteLength);
  }

  /**
   * The message joined into the shared scratch buffer: valid only until the
   * next joinTransient call, whichever ChunkedResponse makes it. For responseSerialize,
   * whose result grpc-js copies before it returns, and nothing else.
   */
  joinTransient(): Buffer {
    if (scratch.length < this.byteLength)
      scratch = Buffer.allocUnsafeSlow(Math.max(this.byteLength, scratch.length * 2));
    let offset = 0;
    for (const c of this.chunks) {
      scratch.set(c, offset);
      offset += c.length;
    }
    return scratch.subarray(0, this.byteLength);
  }
}

// Grows to the largest response sent, then stays (one buffer per process).
let scratch = Buffer.allocUnsafeSlow(64 * 1024);

/** responseSerialize for methods whose responses are ChunkedResponses (or, from tests, Buffers). */
export function serializeResponse(res: ChunkedResponse | Buffer): Buffer {
  return res instanceof ChunkedResponse ? res.joinTransient() : res;
}
