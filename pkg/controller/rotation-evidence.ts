// Which connected proxies do not hold a root rotation stage yet, judged from
// what the ADS server sent each one over SDS and whether the proxy ACKed it:
// the trust bundle travels inline in the validation-context secrets, the
// workload certificate in `service-cert:*`. Envoy ACKs a response only once it
// has applied it (xDS protocol, "ACK/NACK and resource type instance
// version"), so an ACKed bundle is one the proxy validates peers with.
import { TypeUrl } from '../envoy/types.js';
import { identityKey } from '../mesh/identity.js';
import type { EncodedResource } from '../xds/cache/encoded.js';
import type { StreamStatus } from '../xds/server/types.js';

const SERVICE_CERT = 'service-cert:';

export interface BundleExpectation {
  /** Roots the stage's bundle holds (PEM, one each). */
  current: readonly string[];
  /** Roots of the rotation the stage's bundle no longer holds. */
  retired: readonly string[];
  /** The workload certificate an identity must hold now (PEM), if it has one. */
  ownCertPem(identityKey: string): string | undefined;
}

function contains(haystack: Uint8Array, needle: Buffer): boolean {
  return Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength).includes(needle);
}

/** Whether one stream's last ACKed SDS carries exactly the expected bundle and its current certificate. */
export function streamHoldsStage(
  status: StreamStatus,
  sentSecrets: readonly EncodedResource[] | undefined,
  want: { current: readonly Buffer[]; retired: readonly Buffer[]; ownCertPem: Buffer | undefined },
): boolean {
  const sds = status.types[TypeUrl.Secret];
  // No SDS (proxyless gRPC reads its certificates from files): nothing to hold here.
  if (sds === undefined) return true;
  if (sds.sentVersion !== undefined && sds.ackedVersion !== sds.sentVersion) return false;
  for (const r of sentSecrets ?? []) {
    if (r.name.startsWith(SERVICE_CERT)) {
      if (want.ownCertPem !== undefined && !contains(r.framed, want.ownCertPem)) return false;
      continue;
    }
    const carriesRoots = [...want.current, ...want.retired].some((root) => contains(r.framed, root));
    if (!carriesRoots) continue;
    if (!want.current.every((root) => contains(r.framed, root))) return false;
    if (want.retired.some((root) => contains(r.framed, root))) return false;
  }
  return true;
}

/** Streams that do not hold the stage yet. */
export function proxiesBehind(
  streams: readonly StreamStatus[],
  sent: (streamId: string) => readonly EncodedResource[] | undefined,
  e: BundleExpectation,
): number {
  const current = e.current.map((p) => Buffer.from(p.trim()));
  const retired = e.retired.map((p) => Buffer.from(p.trim()));
  let behind = 0;
  for (const s of streams) {
    const own = e.ownCertPem(identityKey(s.identity));
    const ok = streamHoldsStage(s, sent(s.streamId), {
      current,
      retired,
      ownCertPem: own === undefined ? undefined : Buffer.from(own.trim()),
    });
    if (!ok) behind++;
  }
  return behind;
}
