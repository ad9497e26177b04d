// A Zipkin collector for the tests: what Envoy's Zipkin tracer POSTs to
// (`/api/v2/spans`, a JSON array of v2 spans, collector_endpoint_version
// HTTP_JSON), kept in memory. The tracer under test is the real Envoy; this
// only speaks the collector's side of the protocol (zipkin-api's zipkin2-api.yaml).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The v2 span fields the tests read. */
export interface ZipkinSpan {
  traceId: string;
  id: string;
  parentId?: string;
  kind?: 'CLIENT' | 'SERVER' | 'PRODUCER' | 'CONSUMER';
  name?: string;
  localEndpoint?: { serviceName?: string; ipv4?: string };
  tags?: Record<string, string>;
}

export class ZipkinCollector {
  readonly spans: ZipkinSpan[] = [];
  /** Requests refused (wrong path, method, content type or body), for the failure message. */
  readonly refused: string[] = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(host: string, path = '/api/v2/spans'): Promise<ZipkinCollector> {
    let collector: ZipkinCollector | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const type = req.headers['content-type'] ?? '';
        if (req.method !== 'POST' || req.url !== path || !type.startsWith('application/json')) {
          collector?.refused.push(`${req.method} ${req.url} ${type}`);
          res.writeHead(404).end();
          return;
        }
        try {
          const spans: unknown = JSON.parse(body);
          if (!Array.isArray(spans)) throw new Error('not an array');
          collector?.spans.push(...(spans as ZipkinSpan[]));
          res.writeHead(202).end();
        } catch (err) {
          collector?.refused.push(`${String(err)}: ${body.slice(0, 200)}`);
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => resolve());
    });
    collector = new ZipkinCollector(server, (server.address() as AddressInfo).port);
    return collector;
  }

  /**
   * Spans carrying this x-request-id (Envoy tags every span `guid:x-request-id`).
   * A UUID's version digit (index 14) is where Envoy records its trace decision
   * (request_id/uuid), so it is not compared.
   */
  withRequestId(id: string): ZipkinSpan[] {
    const key = (s: string) => (s.length === 36 ? s.slice(0, 14) + s.slice(15) : s);
    return this.spans.filter((s) => key(s.tags?.['guid:x-request-id'] ?? '') === key(id));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
