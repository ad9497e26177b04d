// In the classic layout Envoy is an ordinary container that starts with the
// app, and its listeners (the static probe listeners of the bootstrap and the
// inbound listener that a redirected tcpSocket probe reaches) accept
// connections only once Envoy's initialisation is over: initial CDS and LDS
// applied, or their initial_fetch_timeout passed (Envoy's docs, "Operations →
// Initialization"). Until then every probe that goes through the proxy fails.
// A liveness probe with a short budget (period × failureThreshold) then kills
// an app that is fine, because its proxy waited for the controller, and the
// pod serves a restarting app once it is Ready. Kubelet runs liveness only once
// a startupProbe passed, so the injector gives such containers a startup
// budget long enough for Envoy's initialisation, and leaves liveness as the
// user set it for the rest of the pod's life.
//
// The native layout needs none of this: its app starts only after Envoy's own
// startupProbe passed (layout.ts).
import { isJsonObject, type JsonObject, type PodInfo } from './pod.js';
import type { ProbePlan } from './probes.js';

/**
 * How long a proxied probe may fail while Envoy initialises. Envoy turns LIVE at
 * the latest once initial_fetch_timeout (15 s, Envoy's default) passed for CDS,
 * for the EDS of the clusters it warms, and for LDS and RDS in turn: 4 × 15 s.
 */
export const PROXY_INIT_GRACE_S = 60;

/** What the injector adds or replaces: `spec.containers[container].startupProbe`. */
export interface StartupGrace {
  container: number;
  /** `replace` when the container had a startupProbe (its threshold raised), `add` when one is new. */
  op: 'add' | 'replace';
  probe: JsonObject;
}

/** Kubelet's defaults (core/v1 Probe): period 10 s, failureThreshold 3, timeout 1 s. */
const DEFAULT_PERIOD_S = 10;
const DEFAULT_FAILURES = 3;

function positiveInt(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : fallback;
}

/**
 * Whether a probe's connection goes through the proxy: exec probes never touch
 * the network, and a probe aimed at another host is not this pod's traffic.
 * tcpSocket probes to an app port are redirected to the inbound listener (an
 * excluded port is counted too: a longer startup budget is harmless there).
 */
function throughProxy(probe: JsonObject): boolean {
  for (const handler of ['httpGet', 'tcpSocket', 'grpc'] as const) {
    const h = probe[handler];
    if (isJsonObject(h)) return !(typeof h['host'] === 'string' && h['host'] !== '');
  }
  return false;
}

/**
 * The startup probes that keep a classic pod's liveness probes from killing
 * its app while Envoy initialises:
 * - a container with a proxied liveness probe and no startupProbe gets one:
 *   the liveness probe as rewritten (same handler, headers and timeout), every
 *   second, for PROXY_INIT_GRACE_S plus the liveness probe's own budget, from
 *   its initialDelaySeconds;
 * - a container with a proxied startupProbe keeps it, with failureThreshold
 *   raised by PROXY_INIT_GRACE_S worth of its periods, since it fails for the
 *   same reason.
 * A container whose startupProbe does not go through the proxy (exec) keeps
 * it as it is: it is the user's own gate, and a pod has only one.
 */
export function planStartupGrace(pod: PodInfo, plan: ProbePlan): StartupGrace[] {
  const out: StartupGrace[] = [];
  pod.containers.forEach((c, index) => {
    const rewritten = (kind: 'livenessProbe' | 'startupProbe', probe: JsonObject): JsonObject => {
      const r = plan.rewrites.find((x) => x.container === index && x.kind === kind);
      return r ? { ...probe, [r.handler]: r.value } : probe;
    };
    const startup = c.probes.startupProbe;
    if (startup) {
      if (!throughProxy(startup)) return;
      const period = positiveInt(startup['periodSeconds'], DEFAULT_PERIOD_S);
      const failures = positiveInt(startup['failureThreshold'], DEFAULT_FAILURES);
      out.push({
        container: index,
        op: 'replace',
        probe: {
          ...rewritten('startupProbe', startup),
          failureThreshold: failures + Math.ceil(PROXY_INIT_GRACE_S / period),
        },
      });
      return;
    }
    const liveness = c.probes.livenessProbe;
    if (!liveness || !throughProxy(liveness)) return;
    const own =
      positiveInt(liveness['periodSeconds'], DEFAULT_PERIOD_S) *
      positiveInt(liveness['failureThreshold'], DEFAULT_FAILURES);
    // The same check (handler, headers, initialDelaySeconds, timeoutSeconds); a startupProbe's
    // successThreshold must be 1 (API validation), so the liveness one is not carried over.
    const probe: JsonObject = { ...rewritten('livenessProbe', liveness) };
    delete probe['successThreshold'];
    out.push({
      container: index,
      op: 'add',
      probe: { ...probe, periodSeconds: 1, failureThreshold: PROXY_INIT_GRACE_S + own },
    });
  });
  return out;
}
