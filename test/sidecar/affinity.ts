// Session-affinity bookkeeping shared by the sidecar and gateway affinity
// tests: which pods each user's calls reached, and how many users stuck to one.
import assert from 'node:assert/strict';
import type { Outcomes, SidecarMesh } from './mesh.js';

/** The pods each user's calls reached (`200 <pod>` outcomes), user by user; every call must be a 200. */
export async function podsByUser(
  users: number,
  callsPerUser: number,
  callAs: (user: number) => Promise<Outcomes>,
): Promise<string[][]> {
  const out: string[][] = [];
  for (let u = 0; u < users; u++) {
    const r = await callAs(u);
    const ok = Object.entries(r.counts).filter(([k]) => k.startsWith('200 '));
    assert.equal(
      ok.reduce((n, [, v]) => n + v, 0),
      callsPerUser,
      `user ${u}: ${JSON.stringify(r)}`,
    );
    out.push(ok.map(([k]) => k.slice('200 '.length)));
  }
  return out;
}

/** Users whose calls all reached one pod. */
export const pinned = (users: string[][]) => users.filter((pods) => pods.length === 1).length;

/** Users whose calls all reached `pod`. */
export const usersOn = (users: string[][], pod: string) =>
  users.filter((p) => p.length === 1 && p[0] === pod).length;

/** Applies the UpstreamTrafficSetting of `svc`: RingHash with these hashOn keys. */
export function applyRingHash(
  mesh: SidecarMesh,
  svc: string,
  hashOn: Record<string, unknown>[],
): Promise<void> {
  return mesh.apply('policy.skein.dev', 'v1alpha1', 'upstreamtrafficsettings', {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'UpstreamTrafficSetting',
    metadata: { name: svc, namespace: mesh.namespace },
    spec: {
      host: `${svc}.${mesh.namespace}.svc.cluster.local`,
      loadBalancer: { policy: 'RingHash', hashOn },
    },
  });
}
