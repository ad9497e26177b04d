// Retry policy (policy.skein.dev/v1alpha1 Retry, OSM v1.2's field names plus
// retriableStatusCodes and a retry budget): how one source identity's sidecar
// retries requests to each destination service. Resolved here per source and
// destination, with conflicts settled and reported, so the generators only
// turn a RetryRule into Envoy's route retry_policy and cluster retry_budget.

import { parseDuration } from '../mesh/duration.js';
import { type Identity, identityKey } from '../mesh/identity.js';
import type { Retry } from '../model/objects.js';
import { compareStrings } from './pods.js';
import type { ProblemList } from './problems.js';

/** What one source's sidecar does for one destination service. */
export interface RetryRule {
  /** `Retry <ns>/<name>` */
  origin: string;
  /** Envoy retry_on conditions, trimmed, in the order given. */
  retryOn: readonly string[];
  numRetries: number;
  perTryTimeoutMs?: number;
  backoffBaseMs?: number;
  retriableStatusCodes: readonly number[];
  budget?: { percent: number; minConcurrency?: number };
}

// Envoy's router retry_on values (x-envoy-retry-on and x-envoy-retry-grpc-on);
// anything else Envoy ignores silently, so a typo would turn retries off unseen.
const HTTP_CONDITIONS = new Set([
  '5xx',
  'gateway-error',
  'reset',
  'reset-before-request',
  'connect-failure',
  'envoy-ratelimited',
  'retriable-4xx',
  'refused-stream',
  'retriable-status-codes',
  'retriable-headers',
  'http3-post-connect-failure',
]);
export const GRPC_CONDITIONS = new Set([
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
]);

function conditions(text: string): string[] {
  return text
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
}

/** Reasons a Retry cannot be used (semantic checks beyond its CRD schema). */
export function retryProblems(r: Retry): string[] {
  const out: string[] = [];
  const p = r.spec.retryPolicy;
  const on = conditions(p.retryOn);
  if (on.length === 0) out.push('spec.retryPolicy.retryOn: no condition given');
  for (const c of on)
    if (!HTTP_CONDITIONS.has(c) && !GRPC_CONDITIONS.has(c))
      out.push(`spec.retryPolicy.retryOn: ${JSON.stringify(c)} is not an Envoy retry condition`);
  for (const field of ['perTryTimeout', 'retryBackoffBaseInterval'] as const) {
    const text = p[field];
    if (text === undefined) continue;
    try {
      if (!(parseDuration(text) > 0)) out.push(`spec.retryPolicy.${field}: must be positive`);
    } catch (err) {
      out.push(`spec.retryPolicy.${field}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if ((p.retriableStatusCodes ?? []).length > 0 && !on.includes('retriable-status-codes'))
    out.push(
      'spec.retryPolicy.retriableStatusCodes: retryOn must include retriable-status-codes for them to apply',
    );
  const seen = new Set<string>();
  r.spec.destinations.forEach((d, i) => {
    const k = `${d.namespace}/${d.name}`;
    if (seen.has(k)) out.push(`spec.destinations[${i}]: ${k} is listed twice`);
    seen.add(k);
  });
  return out;
}

export function compileRetryRule(r: Retry): RetryRule {
  const p = r.spec.retryPolicy;
  const rule: RetryRule = {
    origin: `Retry ${r.metadata.namespace ?? ''}/${r.metadata.name}`,
    retryOn: Object.freeze(conditions(p.retryOn)),
    // OSM and Envoy: one retry when unset.
    numRetries: p.numRetries ?? 1,
    retriableStatusCodes: Object.freeze([...new Set(p.retriableStatusCodes ?? [])].sort((a, b) => a - b)),
  };
  if (p.perTryTimeout !== undefined) rule.perTryTimeoutMs = parseDuration(p.perTryTimeout);
  if (p.retryBackoffBaseInterval !== undefined)
    rule.backoffBaseMs = parseDuration(p.retryBackoffBaseInterval);
  if (p.retryBudget) {
    rule.budget = { percent: p.retryBudget.budgetPercent };
    if (p.retryBudget.minRetryConcurrency !== undefined)
      rule.budget.minConcurrency = p.retryBudget.minRetryConcurrency;
  }
  return Object.freeze(rule);
}

/**
 * source identity key → destination service key (`ns/name`) → rule. Retry
 * objects (already valid, in mesh namespaces) are taken in namespace/name
 * order: for a pair two of them name, the first wins and the other is
 * reported for that pair (it still applies to its other pairs). OSM let the
 * first match win silently.
 */
export function retriesBySource(
  retries: readonly Retry[],
  problems: ProblemList,
): Map<string, Map<string, RetryRule>> {
  const sorted = [...retries].sort(
    (a, b) =>
      compareStrings(a.metadata.namespace ?? '', b.metadata.namespace ?? '') ||
      compareStrings(a.metadata.name, b.metadata.name),
  );
  const out = new Map<string, Map<string, RetryRule>>();
  for (const r of sorted) {
    const rule = compileRetryRule(r);
    const source: Identity = { namespace: r.spec.source.namespace, serviceAccount: r.spec.source.name };
    const sk = identityKey(source);
    let byDest = out.get(sk);
    if (!byDest) {
      byDest = new Map();
      out.set(sk, byDest);
    }
    for (const d of r.spec.destinations) {
      const dk = `${d.namespace}/${d.name}`;
      const first = byDest.get(dk);
      if (first) {
        problems.add({
          kind: 'Retry',
          namespace: r.metadata.namespace,
          name: r.metadata.name,
          reason: `conflicts with ${first.origin} for ${sk} → ${dk}: ${first.origin} is in force for that pair (the first by namespace/name wins)`,
        });
        continue;
      }
      byDest.set(dk, rule);
    }
  }
  return out;
}
