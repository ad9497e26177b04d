// Where the Envoy sidecar goes in the pod spec, as pure functions:
//
// - classic: a regular container next to the app's. Kubelet starts it with the
//   app containers and SIGTERMs them all at once at deletion, so the app may
//   start before Envoy has its listeners and may still be draining after Envoy
//   exited;
// - native: an init container with `restartPolicy: Always` (KEP-753
//   SidecarContainers: beta and on by default from Kubernetes 1.29, GA in
//   1.33). Kubelet starts it after the init containers before it, waits for its
//   startupProbe before starting the next init container and then the app, keeps
//   it running for the pod's lifetime, and stops it only after every regular
//   container has exited (sidecars last, in reverse order).
//
// The controller picks the default once (--native-sidecars, the API server's
// version for `auto`); a pod's `skein.dev/native-sidecar` annotation wins.
import { ANNOTATION_NATIVE_SIDECAR, ENVOY_READY_PATH, PORT_ENVOY_READINESS } from './constants.js';
import { badAnnotation } from './errors.js';
import { isJsonObject, type JsonObject, type PodInfo } from './pod.js';

export type SidecarLayout = 'native' | 'classic';

/** --native-sidecars: `auto` follows the API server's version, the others force a layout. */
export type NativeSidecarsMode = 'auto' | 'always' | 'never';
export const NATIVE_SIDECARS_MODES: readonly NativeSidecarsMode[] = ['auto', 'always', 'never'];
export const DEFAULT_NATIVE_SIDECARS_MODE: NativeSidecarsMode = 'auto';

export function isNativeSidecarsMode(v: unknown): v is NativeSidecarsMode {
  return NATIVE_SIDECARS_MODES.some((m) => m === v);
}

/** The oldest Kubernetes whose API server keeps `restartPolicy` on init containers by default (KEP-753 beta). */
export const NATIVE_SIDECARS_MIN_VERSION = { major: 1, minor: 29 } as const;

export interface ServerVersion {
  major: number;
  minor: number;
  /** As the server reported it (`v1.36.0`, `v1.29.3-gke.1`), for logs. */
  gitVersion: string;
}

/**
 * Reads `GET /version` (k8s.io/apimachinery version.Info). Providers append to
 * `minor` (GKE/EKS: "29+"), so the leading digits count; `gitVersion` is the
 * fallback when major/minor are empty. Undefined when neither parses.
 */
export function parseServerVersion(body: unknown): ServerVersion | undefined {
  if (!isJsonObject(body)) return undefined;
  const gitVersion = typeof body['gitVersion'] === 'string' ? body['gitVersion'] : '';
  const lead = (v: unknown): number | undefined => {
    const m = typeof v === 'string' ? /^(\d+)/.exec(v) : null;
    return m ? Number(m[1]) : undefined;
  };
  const major = lead(body['major']);
  const minor = lead(body['minor']);
  if (major !== undefined && minor !== undefined) return { major, minor, gitVersion };
  const git = /^v?(\d+)\.(\d+)/.exec(gitVersion);
  if (git) return { major: Number(git[1]), minor: Number(git[2]), gitVersion };
  return undefined;
}

export function supportsNativeSidecars(v: Pick<ServerVersion, 'major' | 'minor'>): boolean {
  const min = NATIVE_SIDECARS_MIN_VERSION;
  return v.major > min.major || (v.major === min.major && v.minor >= min.minor);
}

export interface LayoutChoice {
  /** The layout of pods without the annotation. */
  native: boolean;
  /** Why, for the controller's start-up log. */
  reason: string;
  /** `auto` could not learn the version and fell back to classic: worth a warning. */
  fellBack?: true;
}

/**
 * The default layout from --native-sidecars and what the API server said:
 * a version, `unavailable` (the request failed or the answer did not parse;
 * classic is the layout every Kubernetes runs), or `none` (local mode: no
 * cluster to ask, so classic unless forced).
 */
export function chooseDefaultLayout(
  mode: NativeSidecarsMode,
  server: ServerVersion | { unavailable: string } | 'none',
): LayoutChoice {
  if (mode === 'always') return { native: true, reason: '--native-sidecars=always' };
  if (mode === 'never') return { native: false, reason: '--native-sidecars=never' };
  if (server === 'none') return { native: false, reason: 'auto without a cluster: classic' };
  if ('unavailable' in server)
    return {
      native: false,
      reason: `auto: the API server's version is unknown (${server.unavailable}): classic`,
      fellBack: true,
    };
  const min = `${NATIVE_SIDECARS_MIN_VERSION.major}.${NATIVE_SIDECARS_MIN_VERSION.minor}`;
  return supportsNativeSidecars(server)
    ? {
        native: true,
        reason: `auto: Kubernetes ${server.gitVersion || `${server.major}.${server.minor}`} >= ${min}`,
      }
    : {
        native: false,
        reason: `auto: Kubernetes ${server.gitVersion || `${server.major}.${server.minor}`} < ${min}`,
      };
}

/** The pod's layout: its `skein.dev/native-sidecar` annotation, else the default. Throws InjectionError. */
export function podLayout(pod: PodInfo, nativeByDefault: boolean): SidecarLayout {
  const value = pod.annotations[ANNOTATION_NATIVE_SIDECAR];
  if (value === undefined) return nativeByDefault ? 'native' : 'classic';
  if (value === 'true') return 'native';
  if (value === 'false') return 'classic';
  throw badAnnotation(ANNOTATION_NATIVE_SIDECAR, `pod ${pod.name}`, value, 'use "true" or "false"');
}

function envoyReadyGet(): JsonObject {
  return { path: ENVOY_READY_PATH, port: PORT_ENVOY_READINESS, scheme: 'HTTP' };
}

/**
 * Gates the app's start on Envoy (native layout: kubelet starts the next
 * container only once a sidecar's startupProbe passed, KEP-753). Every second,
 * so the app waits at most ~1 s past Envoy's readiness; 120 failures (~2 min)
 * before kubelet restarts Envoy: even with the controller unreachable Envoy
 * turns LIVE after its initial_fetch_timeout (15 s per xDS type), so only a
 * wedged Envoy gets there.
 */
export function envoyStartupProbe(): JsonObject {
  return { httpGet: envoyReadyGet(), periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 120 };
}

/**
 * Keeps the pod out of Service endpoints while Envoy is not LIVE (draining, or
 * restarted and re-initialising): a sidecar's readiness counts toward the pod's
 * Ready condition (KEP-753). Starts after the startup probe passed.
 */
export function envoyReadinessProbe(): JsonObject {
  return { httpGet: envoyReadyGet(), periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 3 };
}
