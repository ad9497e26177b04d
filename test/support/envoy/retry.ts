// Retry objects added to the bookstore test mesh (test/support/envoy/mesh.ts).
import type { AnyObject, Retry, RetryPolicySpec } from '../../../pkg/model/objects.js';

export function retry(
  ns: string,
  name: string,
  source: string,
  destinations: string[],
  retryPolicy: RetryPolicySpec,
): Retry {
  return {
    apiVersion: 'policy.skein.dev/v1alpha1',
    kind: 'Retry',
    metadata: { namespace: ns, name },
    spec: {
      source: { kind: 'ServiceAccount', name: source, namespace: ns },
      destinations: destinations.map((d) => {
        const [namespace = '', svc = ''] = d.split('/');
        return { kind: 'Service' as const, namespace, name: svc };
      }),
      retryPolicy,
    },
  };
}

/** bookbuyer retries calls to the bookstore apex and to bookstore-v1, with a budget. */
export function bookbuyerRetries(): AnyObject[] {
  return [
    retry('bookbuyer', 'to-bookstore', 'bookbuyer', ['bookstore/bookstore', 'bookstore/bookstore-v1'], {
      retryOn: '5xx,reset,retriable-status-codes,unavailable',
      numRetries: 3,
      perTryTimeout: '250ms',
      retryBackoffBaseInterval: '10ms',
      retriableStatusCodes: [409],
      retryBudget: { budgetPercent: 20, minRetryConcurrency: 2 },
    }),
  ];
}
