// A RetryRule (catalog/retry.ts) in Envoy's terms: the route's retry_policy
// on the source's outbound route, and the retry budget, a circuit-breaker
// threshold of the source's upstream cluster for the destination.
import { GRPC_CONDITIONS, type RetryRule } from '../../catalog/retry.js';
import type { CircuitBreakers, Duration, Route$RetryPolicy } from '../api/envoy.js';
import { AnyType, ExtName, typed } from './xds.js';

/** Host selections per retry that may skip an endpoint already tried (Envoy's docs suggest 3). */
const HOST_SELECTION_ATTEMPTS = 3;

export function durationMs(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

/** Envoy's route retry_policy: retry_on takes HTTP and gRPC conditions alike (router filter docs). */
export function routeRetryPolicy(rule: RetryRule): Route$RetryPolicy {
  const policy: Route$RetryPolicy = {
    retry_on: rule.retryOn.join(','),
    num_retries: { value: rule.numRetries },
    // A retry goes to another endpoint than the ones already tried, where one is available: a
    // request that hung on a terminating pod is otherwise retried on it again by chance
    // (Envoy's router docs, "Retry plugin configuration": previous_hosts).
    retry_host_predicate: [
      { name: ExtName.PreviousHostsPredicate, typed_config: typed(AnyType.PreviousHostsPredicate) },
    ],
    host_selection_retry_max_attempts: HOST_SELECTION_ATTEMPTS,
  };
  if (rule.perTryTimeoutMs !== undefined) policy.per_try_timeout = durationMs(rule.perTryTimeoutMs);
  // Envoy's default max_interval is 10x the base; set both so the config says what applies.
  if (rule.backoffBaseMs !== undefined)
    policy.retry_back_off = {
      base_interval: durationMs(rule.backoffBaseMs),
      max_interval: durationMs(rule.backoffBaseMs * 10),
    };
  if (rule.retriableStatusCodes.length > 0) policy.retriable_status_codes = [...rule.retriableStatusCodes];
  return policy;
}

/**
 * The subset grpc-js-xds 1.14 applies (gRFC A44): retry_on gRPC status names
 * (others ignored), num_retries and retry_back_off; per_try_timeout and
 * status codes are not read. Undefined when no gRPC condition remains:
 * grpc-js would then not retry at all, so nothing is sent.
 */
export function proxylessRetryPolicy(rule: RetryRule): Route$RetryPolicy | undefined {
  const on = rule.retryOn.filter((c) => GRPC_CONDITIONS.has(c));
  // grpc-js-xds NACKs num_retries < 1 (route-config-resource-type.js validateRetryPolicy).
  if (on.length === 0 || rule.numRetries < 1) return undefined;
  const policy: Route$RetryPolicy = { retry_on: on.join(','), num_retries: { value: rule.numRetries } };
  if (rule.backoffBaseMs !== undefined)
    policy.retry_back_off = {
      base_interval: durationMs(rule.backoffBaseMs),
      max_interval: durationMs(rule.backoffBaseMs * 10),
    };
  return policy;
}

/**
 * Envoy's retry_budget (cluster circuit_breakers, default priority): active
 * retries may be at most budget_percent of active requests, with
 * min_retry_concurrency always allowed; it replaces max_retries.
 */
export function retryBudgetBreakers(rule: RetryRule): CircuitBreakers | undefined {
  if (!rule.budget) return undefined;
  const budget: NonNullable<NonNullable<CircuitBreakers['thresholds']>[number]['retry_budget']> = {
    budget_percent: { value: rule.budget.percent },
  };
  if (rule.budget.minConcurrency !== undefined)
    budget.min_retry_concurrency = { value: rule.budget.minConcurrency };
  return { thresholds: [{ retry_budget: budget }] };
}
