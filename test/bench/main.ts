#!/usr/bin/env node
// `make bench`: the controller against a fleet of real mTLS ADS clients.
import { writeFile } from 'node:fs/promises';
import { BENCH_USAGE, parseBenchArgs } from './args.js';
import { formatReport } from './report.js';
import { runBench } from './run.js';

async function main(argv: string[]): Promise<number> {
  let opts: ReturnType<typeof parseBenchArgs>;
  try {
    opts = parseBenchArgs(argv);
  } catch (err) {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n\n${BENCH_USAGE}`);
    return 2;
  }
  if (opts === 'help') {
    process.stdout.write(BENCH_USAGE);
    return 0;
  }
  const result = await runBench(opts);
  process.stdout.write(`${formatReport(result)}\n`);
  if (opts.json) await writeFile(opts.json, `${JSON.stringify(result, null, 2)}\n`);
  return result.initial.incomplete > 0 ||
    (result.storm?.incomplete ?? 0) > 0 ||
    (result.failover?.incomplete ?? 0) > 0
    ? 1
    : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
