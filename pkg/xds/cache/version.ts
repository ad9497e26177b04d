import { createHash } from 'node:crypto';
import type { EncodedResource } from './encoded.js';

/**
 * The version_info of a response (xDS rule 3: per type): a hash over the
 * sorted (name, content hash) pairs sent, so equal content gives an equal
 * version and "unchanged" is a string comparison.
 */
export function contentVersion(resources: readonly EncodedResource[]): string {
  const sorted = [...resources].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const h = createHash('sha256');
  for (const r of sorted) h.update(r.name).update('\0').update(r.hash).update('\n');
  return h.digest('hex').slice(0, 16);
}
