#!/usr/bin/env node
// skein-agent: the in-pod relay that gives a proxyless gRPC workload an mTLS
// identity towards the controller (pkg/agent/forwarder.ts).
import { AdsForwarder } from '../../pkg/agent/forwarder.js';
import { AGENT_USAGE, parseAgentArgs } from '../../pkg/agent/options.js';
import { createLogger } from '../../pkg/logger/logger.js';

async function main(argv: string[]): Promise<number> {
  let options: ReturnType<typeof parseAgentArgs>;
  try {
    options = parseAgentArgs(argv);
  } catch (err) {
    process.stderr.write(
      `skein-agent: ${err instanceof Error ? err.message : String(err)}\n\n${AGENT_USAGE}`,
    );
    return 2;
  }
  if (options === 'help') {
    process.stdout.write(AGENT_USAGE);
    return 0;
  }
  const log = createLogger(options.logLevel !== undefined ? { level: options.logLevel } : {});
  const forwarder = new AdsForwarder({ ...options, logger: log });
  try {
    const port = await forwarder.start();
    log.info({ type: 'ready', port }, 'skein-agent ready');
  } catch (err) {
    log.fatal({ err }, 'skein-agent failed to start');
    return 1;
  }
  const shutdown = (signal: string) => {
    log.info({ signal, ...forwarder.counts }, 'shutting down');
    forwarder.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  return -1;
}

main(process.argv.slice(2)).then((code) => {
  if (code >= 0) process.exit(code);
});
