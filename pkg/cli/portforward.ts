// A local TCP port forwarded to a pod port through the API server (the
// pods/portforward subresource, via client-node's PortForward), like
// `kubectl port-forward`: every accepted connection opens its own stream.
import { createServer, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { type KubeConfig, PortForward } from '@kubernetes/client-node';

export interface Forward {
  /** The local port on 127.0.0.1. */
  port: number;
  /** Stops listening and drops open connections. */
  close(): Promise<void>;
}

export async function forwardPort(
  kubeConfig: KubeConfig,
  namespace: string,
  pod: string,
  remotePort: number,
  onError: (message: string) => void,
  localPort = 0,
): Promise<Forward> {
  const pf = new PortForward(kubeConfig, true);
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // The error channel carries the kubelet's message (e.g. nothing listens on the port).
    const errors = new Writable({
      write(chunk: Buffer, _enc, done) {
        onError(`port-forward to ${namespace}/${pod}:${remotePort}: ${chunk.toString('utf8').trim()}`);
        done();
      },
    });
    pf.portForward(namespace, pod, [remotePort], socket, errors, socket).then(
      (ws) => {
        socket.once('close', () => {
          if (typeof ws !== 'function') ws.close();
        });
      },
      (err: unknown) => {
        onError(
          `port-forward to ${namespace}/${pod}:${remotePort}: ${err instanceof Error ? err.message : String(err)}`,
        );
        socket.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(localPort, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
