import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { ChunkedResponse, serializeResponse } from './chunked-response.js';

// Message i: 4 bytes of its index, then chunks of bytes derived from it.
function message(i: number): { response: ChunkedResponse; expected: Buffer } {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(i);
  const chunks: Uint8Array[] = [head];
  for (let c = 0; c < 1 + (i % 7); c++)
    chunks.push(Buffer.alloc(20_000 + ((i * 131 + c) % 5_000), (i + c) & 255));
  const response = new ChunkedResponse(chunks);
  return { response, expected: Buffer.concat(chunks) };
}

const definition: grpc.ServiceDefinition = {
  Burst: {
    path: '/skein.test.Chunked/Burst',
    requestStream: false,
    responseStream: true,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: serializeResponse,
    responseDeserialize: (b: Buffer) => b,
  },
};

describe('ChunkedResponse', () => {
  it('joins its chunks, into a Buffer of its own or the shared scratch', () => {
    const { response, expected } = message(5);
    assert.equal(response.byteLength, expected.length);
    assert.deepEqual(response.toBuffer(), expected);
    const transient = response.joinTransient();
    assert.deepEqual(Buffer.from(transient), expected);
    // The scratch is reused: the next (smaller) join overwrites the first one's bytes.
    message(0).response.joinTransient();
    assert.notDeepEqual(Buffer.from(transient), expected);
  });

  it('arrives intact through real grpc-js when the writes queue behind back-pressure', async () => {
    const N = 300; // ~12 MB: far beyond the stream's write buffer, so most are serialized late
    const server = new grpc.Server();
    server.addService(definition, {
      Burst: (call: grpc.ServerWritableStream<Buffer, ChunkedResponse>) => {
        let queued = 0;
        for (let i = 0; i < N; i++) if (!call.write(message(i).response)) queued++;
        assert.ok(queued > 0, 'the burst must outrun the transport for the test to mean anything');
        call.end();
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    const Client = grpc.makeGenericClientConstructor(definition, 'Chunked');
    const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    try {
      const received: Buffer[] = [];
      await new Promise<void>((resolve, reject) => {
        const stream = (
          client as unknown as Record<string, (req: Buffer) => grpc.ClientReadableStream<Buffer>>
        )['Burst']?.(Buffer.alloc(0));
        if (!stream) return reject(new Error('no Burst method'));
        stream.pause();
        // Read nothing for a while: the server's writes queue up meanwhile.
        setTimeout(() => stream.resume(), 300);
        stream.on('data', (b: Buffer) => received.push(b));
        stream.on('error', reject);
        stream.on('end', () => resolve());
      });
      assert.equal(received.length, N);
      for (let i = 0; i < N; i++) assert.ok(received[i]?.equals(message(i).expected), `message ${i} intact`);
    } finally {
      client.close();
      server.forceShutdown();
    }
  });
});
