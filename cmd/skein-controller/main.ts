#!/usr/bin/env -S node --max-semi-space-size=4
// The shebang's flag is pkg/controller/node-flags.ts's (also in the image's entrypoint).
import { Controller } from '../../pkg/controller/controller.js';
import { CONTROLLER_USAGE, parseControllerArgs, UsageError } from '../../pkg/controller/options.js';
import { createLogger } from '../../pkg/logger/logger.js';

async function main(argv: string[]): Promise<number> {
  let options: ReturnType<typeof parseControllerArgs>;
  try {
    options = parseControllerArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`skein-controller: ${err.message}\n\n${CONTROLLER_USAGE}`);
      return 2;
    }
    throw err;
  }
  if (options === 'help') {
    process.stdout.write(CONTROLLER_USAGE);
    return 0;
  }
  const log = createLogger(options.logLevel !== undefined ? { level: options.logLevel } : {});
  const controller = new Controller(options, log);
  const shutdown = (signal: string) => {
    log.info({ signal }, 'shutting down');
    controller.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  try {
    await controller.start();
  } catch (err) {
    log.fatal({ err }, 'controller failed to start');
    await controller.stop().catch(() => undefined);
    return 1;
  }
  return -1; // keep running
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(
      `skein-controller: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
