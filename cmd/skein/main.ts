#!/usr/bin/env node
// The skein CLI. This first version knows `version` and `--help`; the install,
// namespace, proxy and policy commands arrive with the Kubernetes work.
import { VERSION } from '../../pkg/version/version.js';

const USAGE = `skein — manage a skein service mesh

Usage:
  skein <command> [flags]

Commands:
  version     Print the CLI version
  help        Show this help

Flags:
  -h, --help  Show help for skein or a command

Run the controller itself with \`skein-controller --help\`.
`;

const COMMANDS: Record<string, { usage: string; run: (args: string[]) => number }> = {
  version: {
    usage: 'Usage: skein version\n\nPrints the CLI version.\n',
    run: () => {
      process.stdout.write(`skein ${VERSION}\n`);
      return 0;
    },
  },
  help: {
    usage: 'Usage: skein help\n',
    run: () => {
      process.stdout.write(USAGE);
      return 0;
    },
  },
};

export function main(argv: string[]): number {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`skein: unknown command ${JSON.stringify(name)}\n\n${USAGE}`);
    return 2;
  }
  if (rest.includes('-h') || rest.includes('--help')) {
    process.stdout.write(command.usage);
    return 0;
  }
  return command.run(rest);
}

process.exitCode = main(process.argv.slice(2));
