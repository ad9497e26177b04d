// Test helper: a tiny state-of-the-world ADS server over insecure loopback
// gRPC that answers each DiscoveryRequest with the generated resources for
// the requested names of a fixed MeshView. No versions across changes, no
// pushes: just enough to put real grpc-js-xds workloads in front of the
// proxyless generators. NACKs are recorded so tests can assert there were none.
import * as grpc from '@grpc/grpc-js';
import type { MeshView } from '../../catalog/types.js';
import { parseProxyCommonName } from '../../mesh/identity.js';
import { encodeMessage } from '../../xds/proto/codec.js';
import { messageType } from '../../xds/proto/root.js';
import { PROXYLESS_GENERATORS } from '../proxyless/generators.js';
import { generationContext, proxyContextFor } from './fake-proxyless-mesh.js';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
const passthrough = (b: Buffer): Buffer => b;
const ADS_SERVICE: grpc.ServiceDefinition = {
  StreamAggregatedResources: {
    path: ADS_PATH,
    requestStream: true,
    responseStream: true,
    requestSerialize: passthrough,
    requestDeserialize: passthrough,
    responseSerialize: passthrough,
    responseDeserialize: passthrough,
  },
};

export interface StaticAds {
  port: number;
  /** `<node id> <type url>: <error>` for every NACK received. */
  readonly nacks: string[];
  close(): Promise<void>;
}

interface Request {
  nodeId?: string;
  typeUrl: string;
  names: string[];
  error?: string;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function field(o: unknown, key: string): unknown {
  return typeof o === 'object' && o !== null ? Object.getOwnPropertyDescriptor(o, key)?.value : undefined;
}

function parseRequest(bytes: Buffer): Request {
  const type = messageType('envoy.service.discovery.v3.DiscoveryRequest');
  const o: unknown = type.toObject(type.decode(bytes), { defaults: true });
  const names = field(o, 'resource_names');
  const nodeId = str(field(field(o, 'node'), 'id'));
  const error = str(field(field(o, 'error_detail'), 'message'));
  return {
    typeUrl: str(field(o, 'type_url')) ?? '',
    names: Array.isArray(names) ? names.filter((n): n is string => typeof n === 'string') : [],
    ...(nodeId ? { nodeId } : {}),
    ...(error !== undefined && field(o, 'error_detail') !== null ? { error } : {}),
  };
}

export async function startStaticAds(mesh: MeshView): Promise<StaticAds> {
  const nacks: string[] = [];
  const responseType = messageType('envoy.service.discovery.v3.DiscoveryResponse');
  let nonce = 0;

  const handler = (call: grpc.ServerDuplexStream<Buffer, Buffer>): void => {
    let nodeId: string | undefined;
    const answered = new Map<string, string>();
    call.on('data', (bytes: Buffer) => {
      const req = parseRequest(bytes);
      nodeId ??= req.nodeId; // only the first request carries the node (xDS rule 5)
      if (req.error !== undefined) {
        nacks.push(`${nodeId} ${req.typeUrl}: ${req.error}`);
        return;
      }
      const key = [...req.names].sort().join('\n');
      // Same names as last answered: an ACK (or nothing new to say).
      if (answered.get(req.typeUrl) === key || req.names.length === 0 || !nodeId) return;
      answered.set(req.typeUrl, key);
      const generator = [...PROXYLESS_GENERATORS.values()].find((g) => g.typeUrl === req.typeUrl);
      if (!generator) return;
      const proxy = proxyContextFor(mesh, parseProxyCommonName(nodeId));
      const wanted = new Set(req.names);
      const resources = generator
        .generate(proxy, generationContext(mesh), wanted)
        .filter((r) => wanted.has(r.name))
        .map((r) => ({ type_url: r.typeUrl, value: encodeMessage(r.typeUrl, r.message) }));
      nonce += 1;
      const response = responseType.fromObject({
        version_info: String(nonce),
        type_url: req.typeUrl,
        nonce: String(nonce),
        resources,
      });
      call.write(Buffer.from(responseType.encode(response).finish()));
    });
    call.on('end', () => call.end());
    call.on('error', () => undefined);
  };

  const server = new grpc.Server();
  server.addService(ADS_SERVICE, { StreamAggregatedResources: handler });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    port,
    nacks,
    close: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        resolve();
      }),
  };
}
