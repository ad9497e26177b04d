#!/usr/bin/env node
// The skein CLI; everything lives in pkg/cli.
import { runCli } from '../../pkg/cli/main.js';

const abort = new AbortController();
// First Ctrl-C: let the command finish cleanly (close port-forwards); a second one exits at once.
process.once('SIGINT', () => {
  abort.abort();
  process.once('SIGINT', () => process.exit(130));
});
process.once('SIGTERM', () => abort.abort());

process.exitCode = await runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
  signal: abort.signal,
});
