// The test node's cluster DNS: a stand-in for CoreDNS's kubernetes plugin that
// answers what the tests' pods ask, `<service>.<namespace>.svc.<domain>` A
// records with the Service's ClusterIP (headless Services: the ready addresses
// of their EndpointSlices), looked up on the API server per query with a 1 s
// cache. Everything else is NXDOMAIN at once, so resolvers (c-ares in Envoy)
// never wait out timeouts. UDP only, as glibc and c-ares ask first and our
// answers are small. (RFC 1035 §4.1 message format.)
import { createSocket, type Socket } from 'node:dgram';
import type { ClusterEndpoint } from './cluster.js';
import { clusterRequest } from './cluster.js';

export interface ClusterDns {
  close(): Promise<void>;
  /** Queries answered so far, by outcome (for test diagnostics). */
  readonly counts: Record<'answered' | 'nxdomain' | 'empty', number>;
}

const TYPE_A = 1;
const CLASS_IN = 1;
const RCODE_NXDOMAIN = 3;
const TTL_S = 5;
const CACHE_MS = 1000;

interface Question {
  labels: string[];
  type: number;
  end: number;
}

function parseQuestion(msg: Buffer): Question | undefined {
  if (msg.length < 12 || msg.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let i = 12;
  for (;;) {
    const len = msg[i];
    if (len === undefined || len > 63) return undefined;
    i += 1;
    if (len === 0) break;
    labels.push(
      msg
        .subarray(i, i + len)
        .toString('ascii')
        .toLowerCase(),
    );
    i += len;
  }
  if (i + 4 > msg.length) return undefined;
  return { labels, type: msg.readUInt16BE(i), end: i + 4 };
}

function reply(query: Buffer, q: Question, rcode: number, addresses: string[]): Buffer {
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  // QR=1, opcode from the query, AA=1, RD copied, RA=1, rcode.
  header.writeUInt16BE(0x8400 | (query.readUInt16BE(2) & 0x7900) | 0x0080 | rcode, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(addresses.length, 6);
  const question = query.subarray(12, q.end);
  const answers = addresses.map((ip) => {
    const rr = Buffer.alloc(16);
    rr.writeUInt16BE(0xc00c, 0); // name: pointer to the question's
    rr.writeUInt16BE(TYPE_A, 2);
    rr.writeUInt16BE(CLASS_IN, 4);
    rr.writeUInt32BE(TTL_S, 6);
    rr.writeUInt16BE(4, 10);
    ip.split('.').forEach((octet, k) => {
      rr[12 + k] = Number(octet);
    });
    return rr;
  });
  return Buffer.concat([header, question, ...answers]);
}

/** Starts the DNS stand-in on `host`:53 for the cluster's Services. */
export async function startClusterDns(
  cluster: ClusterEndpoint,
  host: string,
  domain: string,
): Promise<ClusterDns> {
  const cache = new Map<string, { at: number; addresses: string[] | undefined }>();
  const counts = { answered: 0, nxdomain: 0, empty: 0 };

  const get = async (urlPath: string): Promise<unknown> => {
    const res = await clusterRequest(cluster, 'GET', urlPath, cluster.adminToken);
    return res.status === 200 ? JSON.parse(res.body) : undefined;
  };

  /** The Service's addresses, or undefined when no such Service exists. */
  const lookup = async (service: string, namespace: string): Promise<string[] | undefined> => {
    const key = `${service}.${namespace}`;
    const hit = cache.get(key);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.addresses;
    const svc = (await get(`/api/v1/namespaces/${namespace}/services/${service}`)) as
      | { spec?: { clusterIP?: string } }
      | undefined;
    let addresses: string[] | undefined;
    if (svc) {
      const ip = svc.spec?.clusterIP;
      if (ip && ip !== 'None') addresses = [ip];
      else {
        const slices = (await get(
          `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D${service}`,
        )) as
          | { items?: { endpoints?: { addresses?: string[]; conditions?: { ready?: boolean } }[] }[] }
          | undefined;
        addresses = (slices?.items ?? []).flatMap((s) =>
          (s.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses ?? []),
        );
      }
    }
    cache.set(key, { at: Date.now(), addresses });
    return addresses;
  };

  const domainLabels = ['svc', ...domain.split('.')];
  const answer = async (msg: Buffer): Promise<Buffer | undefined> => {
    const q = parseQuestion(msg);
    if (!q) return undefined;
    const tail = q.labels.slice(-domainLabels.length).join('.');
    const [service, namespace] = q.labels;
    if (
      q.labels.length !== 2 + domainLabels.length ||
      tail !== domainLabels.join('.') ||
      !service ||
      !namespace
    ) {
      counts.nxdomain++;
      return reply(msg, q, RCODE_NXDOMAIN, []);
    }
    const addresses = await lookup(service, namespace).catch(() => undefined);
    if (addresses === undefined) {
      counts.nxdomain++;
      return reply(msg, q, RCODE_NXDOMAIN, []);
    }
    // The name exists: AAAA and other types get an empty NOERROR answer.
    if (q.type !== TYPE_A) {
      counts.empty++;
      return reply(msg, q, 0, []);
    }
    counts.answered++;
    return reply(msg, q, 0, addresses);
  };

  const socket: Socket = createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    const t0 = Date.now();
    void answer(msg).then((out) => {
      // A resolver waits 5 s (glibc's timeout) for an answer that comes late: say so in the log.
      const ms = Date.now() - t0;
      if (ms > 500) {
        const q = parseQuestion(msg);
        process.stderr.write(`cluster-dns: ${q?.labels.join('.')} type ${q?.type} answered after ${ms} ms\n`);
      }
      if (!out) return;
      socket.send(out, rinfo.port, rinfo.address, (err) => {
        if (err)
          process.stderr.write(
            `cluster-dns: answer to ${rinfo.address}:${rinfo.port} not sent: ${err.message}\n`,
          );
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(53, host, () => resolve());
  });
  return {
    counts,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
