import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { listenWithBacklog } from './listen.js';

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

describe('listenWithBacklog', () => {
  it('serves a grpc-js server on its own socket, refuses a taken port, and frees the port on close', async () => {
    const server = new grpc.Server();
    const creds = grpc.ServerCredentials.createInsecure();
    const { tcp, port } = await listenWithBacklog(server, '127.0.0.1', 0, creds);
    try {
      assert.ok(port > 0);
      // A gRPC client reaches the server through the injected connection.
      const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      await new Promise<void>((resolve, reject) =>
        client.waitForReady(Date.now() + 5000, (err) => (err ? reject(err) : resolve())),
      );
      client.close();
      await assert.rejects(listenWithBacklog(new grpc.Server(), '127.0.0.1', port, creds), /EADDRINUSE/);
    } finally {
      await new Promise((resolve) => tcp.close(resolve));
      server.forceShutdown();
    }
    assert.equal(await connects(port), false);
  });
});
