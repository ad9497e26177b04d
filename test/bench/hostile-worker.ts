// The hostile client of `--hostile`, in its own process so its encoding and
// TLS work never lands on the parent's clock: one mTLS ADS stream (a valid
// certificate, as a compromised pod would hold) that subscribes to thousands
// of long EDS names and repeats the request as fast as the stream takes it,
// reconnecting whenever the server ends the stream.
import * as grpc from '@grpc/grpc-js';
import { BuiltinCA } from '../../pkg/certificate/builtin.js';
import { encodeDeltaDiscoveryRequest } from '../../pkg/xds/server/delta-codec.js';
import { ADS_DELTA_PATH, ADS_SOTW_PATH, encodeDiscoveryRequest } from '../../pkg/xds/server/service.js';
import { type HostileParentMessage, type HostileReport, isHostileParentMessage } from './hostile.js';

const EDS = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';

const report: HostileReport = { type: 'report', streams: 0, requests: 0, responses: 0, statuses: {} };
let client: grpc.Client | undefined;
let call: grpc.ClientDuplexStream<Buffer, Buffer> | undefined;
let stopped = false;

function names(count: number, length: number, round: number): string[] {
  // Distinct per round: a repeat of the same list would hit the server's "same names" shortcut.
  return Array.from({ length: count }, (_, i) => `hostile-${round}-${i}-`.padEnd(length, 'x'));
}

function request(
  init: Extract<HostileParentMessage, { type: 'init' }>,
  round: number,
  first: boolean,
): Buffer {
  const node = first ? { node: { id: init.cn, cluster: 'hostile' } } : {};
  const list = names(init.names, init.nameLength, round);
  return Buffer.from(
    init.delta
      ? encodeDeltaDiscoveryRequest({
          typeUrl: EDS,
          resourceNamesSubscribe: list,
          resourceNamesUnsubscribe: [],
          initialResourceVersions: new Map(),
          responseNonce: '',
          ...node,
        })
      : encodeDiscoveryRequest({
          versionInfo: '',
          resourceNames: list,
          typeUrl: EDS,
          responseNonce: '',
          ...node,
        }),
  );
}

function open(
  init: Extract<HostileParentMessage, { type: 'init' }>,
  credentials: grpc.ChannelCredentials,
): void {
  if (stopped) return;
  client ??= new grpc.Client(init.address, credentials, {
    'grpc.max_send_message_length': 64 * 1024 * 1024,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    // The controller's certificate names localhost, as the fleet's channels check it.
    'grpc.ssl_target_name_override': 'localhost',
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 1000,
  });
  const c = client.makeBidiStreamRequest(
    init.delta ? ADS_DELTA_PATH : ADS_SOTW_PATH,
    (b: Buffer) => b,
    (b: Buffer) => b,
  );
  call = c;
  report.streams++;
  let n = 0;
  let ended = false;
  const send = (): void => {
    if (ended || stopped) return;
    // New names every time: each request is a new subscription the server must take in.
    const body = request(init, report.requests, n === 0);
    n++;
    report.requests++;
    c.write(body, () => setTimeout(send, init.intervalMs));
  };
  c.on('data', () => report.responses++);
  c.on('status', (s: grpc.StatusObject) => {
    ended = true;
    const key = `${grpc.status[s.code] ?? s.code}: ${s.details}`;
    report.statuses[key] = (report.statuses[key] ?? 0) + 1;
    setTimeout(() => open(init, credentials), init.intervalMs);
  });
  c.on('error', () => {});
  send();
}

process.on('message', (msg: unknown) => {
  if (!isHostileParentMessage(msg)) return;
  if (msg.type === 'stop') {
    stopped = true;
    call?.cancel();
    client?.close();
    process.send?.(report);
    return;
  }
  void (async () => {
    const ca = await BuiltinCA.loadOrCreate(msg.caDir);
    const cert = await ca.issue({
      commonName: msg.cn,
      uriSans: [msg.spiffe],
      validityMs: 3_600_000,
      usage: 'client',
    });
    const credentials = grpc.credentials.createSsl(
      Buffer.from(ca.trustBundlePem),
      Buffer.from(cert.keyPem),
      Buffer.from(cert.certPem),
    );
    open(msg, credentials);
    process.send?.({ type: 'started' });
  })().catch((err: unknown) => {
    process.stderr.write(`hostile: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
});
