import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import type { FleetTls } from './fleet-transport.js';
import { GrpcFrameReader, grpcFrame, h2Connections } from './h2-transport.js';

test('the frame reader yields each message whole, however the bytes are split', () => {
  const messages = [Buffer.alloc(0), Buffer.from('a'), Buffer.alloc(70_000, 7), Buffer.from('last')];
  const stream = Buffer.concat(messages.map((m) => grpcFrame(m)));
  for (const size of [1, 3, 5, 6, 4096, stream.length]) {
    const got: Buffer[] = [];
    const reader = new GrpcFrameReader((b) => got.push(Buffer.from(b)));
    for (let i = 0; i < stream.length; i += size) reader.push(stream.subarray(i, i + size));
    assert.deepEqual(got, messages, `chunks of ${size}`);
    assert.equal(reader.pending, 0);
  }
  assert.throws(() => new GrpcFrameReader(() => {}).push(Buffer.from([1, 0, 0, 0, 0])), /compressed/);
});

describe('the bare HTTP/2 fleet client against a grpc-js server (mTLS)', () => {
  let dir: string;
  let server: grpc.Server;
  let port = 0;
  let tls: FleetTls;
  /** Echoes every message; a message "end:N" ends the call with status N instead. */
  const echo = (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
    call.on('data', (b: Buffer) => {
      const text = b.toString();
      if (text.startsWith('end:')) {
        const code = Number(text.slice(4));
        if (code === 0) call.end();
        else call.emit('error', { code, details: 'asked to end' });
      } else call.write(b);
    });
    call.on('error', () => {});
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'skein-h2-'));
    const ca = await BuiltinCA.loadOrCreate(dir);
    const serving = await ca.issue({
      commonName: 'ads',
      dnsSans: ['localhost'],
      validityMs: 60_000,
      usage: 'server',
    });
    const client = await ca.issue({ commonName: 'client', validityMs: 60_000, usage: 'client' });
    server = new grpc.Server();
    server.addService(
      {
        echo: {
          path: '/test.Echo/Echo',
          requestStream: true,
          responseStream: true,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => b,
        },
      },
      { echo },
    );
    const creds = grpc.ServerCredentials.createSsl(
      Buffer.from(ca.trustBundlePem),
      [{ cert_chain: Buffer.from(serving.certPem), private_key: Buffer.from(serving.keyPem) }],
      true,
    );
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', creds, (err, p) => (err ? reject(err) : resolve(p))),
    );
    tls = {
      caPem: Buffer.from(ca.trustBundlePem),
      certPem: Buffer.from(client.certPem),
      keyPem: Buffer.from(client.keyPem),
      serverName: 'localhost',
    };
  });

  after(async () => {
    server.forceShutdown();
    await rm(dir, { recursive: true, force: true });
  });

  /** Opens a stream, writes `send`, and resolves with what came back and the end code. */
  function call(address: string, send: Buffer[], t: FleetTls = tls) {
    const connection = h2Connections(t)(address);
    const got: Buffer[] = [];
    const done = new Promise<{ got: Buffer[]; code: number }>((resolve) => {
      const s = connection.stream('/test.Echo/Echo', {
        onMessage: (b) => got.push(Buffer.from(b)),
        onEnd: (code) => resolve({ got, code }),
      });
      for (const b of send) s.write(b);
    });
    return { connection, done };
  }

  test('messages of every size come back intact, and the status ends the stream', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    const send = [Buffer.from('x'), Buffer.alloc(100_000, 3), big, Buffer.from('end:0')];
    const { connection, done } = call(`127.0.0.1:${port}`, send);
    const { got, code } = await done;
    assert.equal(code, 0);
    assert.deepEqual(got, send.slice(0, 3));
    connection.close();
  });

  test('an error status from the server is the stream end code', async () => {
    const { connection, done } = call(`127.0.0.1:${port}`, [Buffer.from('end:7')]);
    assert.equal((await done).code, grpc.status.PERMISSION_DENIED);
    connection.close();
  });

  test('a refused connection, and a server name the certificate lacks, end the stream UNAVAILABLE', async () => {
    const closed = call('127.0.0.1:1', [Buffer.from('x')]);
    assert.equal((await closed.done).code, grpc.status.UNAVAILABLE);
    const wrongName = call(`127.0.0.1:${port}`, [Buffer.from('x')], { ...tls, serverName: 'elsewhere' });
    const r = await wrongName.done;
    assert.equal(r.code, grpc.status.UNAVAILABLE);
    assert.deepEqual(r.got, []);
  });

  test('a second stream after the first ended reuses the connection; a server gone ends it UNAVAILABLE', async () => {
    const connection = h2Connections(tls)(`127.0.0.1:${port}`);
    const open = () =>
      new Promise<number>((resolve) => {
        const s = connection.stream('/test.Echo/Echo', { onMessage: () => {}, onEnd: resolve });
        s.write(Buffer.from('end:0'));
      });
    assert.equal(await open(), 0);
    assert.equal(await open(), 0);
    const ended = new Promise<number>((resolve) => {
      connection
        .stream('/test.Echo/Echo', {
          onMessage: () => server.forceShutdown(),
          onEnd: resolve,
        })
        .write(Buffer.from('ping'));
    });
    assert.equal(await ended, grpc.status.UNAVAILABLE);
    connection.close();
  });
});
