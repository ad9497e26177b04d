import type { MeshMetrics } from '../../pkg/metrics/metrics.js';

/**
 * The value of one series (metric `name`, or a histogram's `name_count` /
 * `name_sum`) with exactly these labels; 0 when the series does not exist yet.
 */
export async function seriesValue(
  metrics: MeshMetrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const base = name.replace(/_(count|sum|bucket)$/, '');
  const metric = metrics.registry.getSingleMetric(base) ?? metrics.registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const want = Object.entries(labels);
  for (const v of values) {
    // Histograms name each series (`_bucket`, `_sum`, `_count`); other metrics do not.
    const series = 'metricName' in v && typeof v.metricName === 'string' ? v.metricName : base;
    if (series !== name) continue;
    const have = Object.keys(v.labels);
    if (have.length === want.length && want.every(([k, val]) => String(v.labels[k]) === val)) return v.value;
  }
  return 0;
}
