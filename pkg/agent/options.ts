// skein-agent's command line.
import { parseArgs } from 'node:util';
import { AGENT_SOCKET_PATH, BOOTSTRAP_MOUNT_PATH, SecretKey } from '../injector/constants.js';
import { type ListenAddress, parseListenAddress } from './listen-address.js';
import type { CredentialFiles } from './pod-credentials.js';

export const AGENT_USAGE = `Usage: skein-agent --controller <host:port> [options]

Relays a proxyless gRPC workload's ADS streams to the skein controller over mTLS with
the pod's certificate; serves plaintext only on a Unix socket or loopback inside the pod.
A stream whose node.id is not the certificate's CN is refused (PERMISSION_DENIED).

  --controller <host:port>  The controller's mTLS ADS address (required)
  --server-name <name>      Name the controller's certificate must carry (default: the host of --controller)
  --listen <address>        unix:<path> or <loopback-host>:<port> (default unix:${AGENT_SOCKET_PATH})
  --cert <file>             ADS client certificate (default ${BOOTSTRAP_MOUNT_PATH}/${SecretKey.cert})
  --key <file>              its key (default ${BOOTSTRAP_MOUNT_PATH}/${SecretKey.key})
  --ca <file>               CA that signed the controller's certificate (default ${BOOTSTRAP_MOUNT_PATH}/${SecretKey.ca})
  --log-level <level>       pino level (default info)
  -h, --help                This help
`;

export interface AgentOptions {
  controller: string;
  serverName: string;
  listen: ListenAddress;
  credentials: CredentialFiles;
  logLevel?: string;
}

/** Parses argv; throws an Error whose message names the flag; 'help' for -h. */
export function parseAgentArgs(argv: string[]): AgentOptions | 'help' {
  const { values: v } = parseArgs({
    args: argv,
    strict: true,
    options: {
      controller: { type: 'string' },
      'server-name': { type: 'string' },
      listen: { type: 'string' },
      cert: { type: 'string' },
      key: { type: 'string' },
      ca: { type: 'string' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (v.help) return 'help';
  const controller = v.controller;
  if (controller === undefined || controller === '') throw new Error('--controller <host:port> is required');
  const host = /^(?:\[([^\]]+)\]|([^:]+)):\d{1,5}$/.exec(controller);
  if (host === null) throw new Error(`--controller ${JSON.stringify(controller)}: expected <host>:<port>`);
  const o: AgentOptions = {
    controller,
    serverName: v['server-name'] ?? host[1] ?? host[2] ?? '',
    listen: parseListenAddress(v.listen ?? `unix:${AGENT_SOCKET_PATH}`),
    credentials: {
      certFile: v.cert ?? `${BOOTSTRAP_MOUNT_PATH}/${SecretKey.cert}`,
      keyFile: v.key ?? `${BOOTSTRAP_MOUNT_PATH}/${SecretKey.key}`,
      caFile: v.ca ?? `${BOOTSTRAP_MOUNT_PATH}/${SecretKey.ca}`,
    },
  };
  if (v['log-level'] !== undefined) o.logLevel = v['log-level'];
  return o;
}
