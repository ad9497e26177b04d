// Scripts the sidecar tests run with node inside a pod (RunningPod.execText), each
// printing one JSON line, and what the tests assert on their output.
import assert from 'node:assert/strict';

/**
 * GETs `url` with Host `host` every 200 ms over one kept-alive connection (an Agent with one
 * socket) until a 200 follows a 403, or 45 s; one JSON line: each change of status with its
 * time, and how many connections the Agent opened.
 */
export const KEEPALIVE_UNTIL_ALLOWED = (host: string, url: string) => `
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const sockets = new Set(); const seen = []; const t0 = Date.now();
const get = () => new Promise((resolve) => {
  const req = http.get(${JSON.stringify(url)}, { agent, headers: { host: ${JSON.stringify(host)} }, timeout: 5000 }, (res) => {
    res.resume(); res.on('end', () => resolve(res.statusCode));
  });
  req.on('socket', (s) => sockets.add(s));
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', (e) => resolve(e.code || e.message));
});
(async () => {
  for (;;) {
    const status = await get();
    if (seen.at(-1)?.status !== status) seen.push({ status, ms: Date.now() - t0 });
    if ((status === 200 && seen.some((x) => x.status === 403)) || Date.now() - t0 > 45000) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  console.log(JSON.stringify({ seen, connections: sockets.size }));
  agent.destroy();
})();`;

/** The first JSON line a script printed (`{}` when it printed none). */
export function firstJsonLine(text: string): Record<string, unknown> {
  const line = text.split('\n').find((l) => l.startsWith('{')) ?? '{}';
  return JSON.parse(line) as Record<string, unknown>;
}

/**
 * KEEPALIVE_UNTIL_ALLOWED's output: denied first, allowed last, and over the one connection
 * it opened (a policy change that only new connections met would show a second one).
 */
export function assertAllowedOnTheOpenConnection(r: Record<string, unknown>): void {
  const { seen, connections } = r as { seen?: { status: number | string }[]; connections?: number };
  const statuses = (seen ?? []).map((x) => x.status);
  assert.equal(statuses[0], 403, JSON.stringify(r));
  assert.equal(statuses.at(-1), 200, JSON.stringify(r));
  assert.equal(connections, 1, `one connection throughout: ${JSON.stringify(r)}`);
}
