// Kubelet probes the pod IP from outside the mesh, without a client
// certificate: once iptables sends every inbound connection to the inbound
// listener (mTLS only), HTTP/HTTPS/gRPC probes to app ports would fail. So the
// injector points them at ports the proxy serves in plaintext (excluded from
// redirection), and the bootstrap forwards them to the app on 127.0.0.1.
// tcpSocket probes keep working unchanged (the redirected connect succeeds,
// which only proves the proxy is up) and exec probes never touch the network.
import {
  PORT_HTTPS_PROBE_FIRST,
  PORT_HTTPS_PROBE_LAST,
  PORT_LIVENESS_PROBE,
  PORT_READINESS_PROBE,
  PORT_STARTUP_PROBE,
} from './constants.js';
import { InjectionError } from './errors.js';
import {
  type ContainerInfo,
  isJsonObject,
  type JsonObject,
  type PodInfo,
  PROBE_KINDS,
  type ProbeKind,
} from './pod.js';

/** An HTTP probe the proxy answers on `listenerPort` at `path`, forwarded to the app. */
export interface HttpProbeForward {
  listenerPort: number;
  path: string;
  targetPort: number;
  targetPath: string;
}

/** HTTPS and gRPC probes pass through a TCP proxy: the app's own TLS/HTTP2 reaches kubelet intact. */
export interface TcpProbeForward {
  listenerPort: number;
  targetPort: number;
}

export interface ProbeForwards {
  http: HttpProbeForward[];
  tcp: TcpProbeForward[];
}

/** The replacement for `spec.containers[container][kind][handler]`. */
export interface ProbeRewrite {
  container: number;
  kind: ProbeKind;
  handler: 'httpGet' | 'grpc';
  value: JsonObject;
}

export interface ProbePlan {
  rewrites: ProbeRewrite[];
  forwards: ProbeForwards;
  /** Every port the proxy serves probes on (to exclude from inbound redirection). */
  ports: number[];
}

const HTTP_LISTENER: Record<ProbeKind, number> = {
  livenessProbe: PORT_LIVENESS_PROBE,
  readinessProbe: PORT_READINESS_PROBE,
  startupProbe: PORT_STARTUP_PROBE,
};
const SHORT: Record<ProbeKind, string> = {
  livenessProbe: 'liveness',
  readinessProbe: 'readiness',
  startupProbe: 'startup',
};

/** The path kubelet asks the proxy for; unique per container and kind so one listener serves them all. */
export function probePath(containerName: string, kind: ProbeKind): string {
  return `/skein-probe/${containerName}/${SHORT[kind]}`;
}

function resolvePort(c: ContainerInfo, kind: ProbeKind, port: unknown): number {
  if (typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65535) return port;
  if (typeof port === 'string') {
    const byName = c.portsByName.get(port);
    if (byName !== undefined) return byName;
    // The API server accepts numeric strings for IntOrString.
    if (/^[0-9]+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535) return Number(port);
  }
  throw new InjectionError(
    `container ${c.name} ${kind} port ${JSON.stringify(port)} is neither a port number nor a named port of the container`,
  );
}

export function planProbes(pod: PodInfo): ProbePlan {
  const rewrites: ProbeRewrite[] = [];
  const http: HttpProbeForward[] = [];
  const tcpByTarget = new Map<number, number>();
  const tcpListener = (target: number): number => {
    let port = tcpByTarget.get(target);
    if (port === undefined) {
      port = PORT_HTTPS_PROBE_FIRST + tcpByTarget.size;
      if (port > PORT_HTTPS_PROBE_LAST)
        throw new InjectionError('too many distinct HTTPS/gRPC probe ports to proxy');
      tcpByTarget.set(target, port);
    }
    return port;
  };
  pod.containers.forEach((c, index) => {
    for (const kind of PROBE_KINDS) {
      const probe = c.probes[kind];
      if (!probe) continue;
      const httpGet = probe['httpGet'];
      const grpc = probe['grpc'];
      if (isJsonObject(httpGet)) {
        // A probe aimed at another host is not intercepted by this pod's iptables.
        if (typeof httpGet['host'] === 'string' && httpGet['host'] !== '') continue;
        const targetPort = resolvePort(c, kind, httpGet['port']);
        if (httpGet['scheme'] === 'HTTPS') {
          rewrites.push({
            container: index,
            kind,
            handler: 'httpGet',
            value: { ...httpGet, port: tcpListener(targetPort) },
          });
          continue;
        }
        const original =
          typeof httpGet['path'] === 'string' && httpGet['path'] !== '' ? httpGet['path'] : '/';
        const path = probePath(c.name, kind);
        const listenerPort = HTTP_LISTENER[kind];
        http.push({
          listenerPort,
          path,
          targetPort,
          // Kubelet sends a path without a leading slash as if it had one.
          targetPath: original.startsWith('/') ? original : `/${original}`,
        });
        rewrites.push({
          container: index,
          kind,
          handler: 'httpGet',
          value: { ...httpGet, path, port: listenerPort, scheme: 'HTTP' },
        });
      } else if (isJsonObject(grpc)) {
        const targetPort = resolvePort(c, kind, grpc['port']);
        rewrites.push({
          container: index,
          kind,
          handler: 'grpc',
          value: { ...grpc, port: tcpListener(targetPort) },
        });
      }
    }
  });
  const tcp = [...tcpByTarget].map(([targetPort, listenerPort]) => ({ listenerPort, targetPort }));
  const ports = [...new Set([...http.map((h) => h.listenerPort), ...tcp.map((t) => t.listenerPort)])].sort(
    (a, b) => a - b,
  );
  return { rewrites, forwards: { http, tcp }, ports };
}
