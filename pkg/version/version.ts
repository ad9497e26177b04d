import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

function packageVersion(): string {
  // dist/pkg/version → ../../../package.json; src pkg/version → ../../package.json
  for (const rel of ['../../../package.json', '../../package.json']) {
    try {
      const pkg: unknown = JSON.parse(readFileSync(require.resolve(rel), 'utf8'));
      if (pkg && typeof pkg === 'object' && 'name' in pkg && pkg.name === 'skein' && 'version' in pkg)
        return String(pkg.version);
    } catch {
      // try the next layout
    }
  }
  return '0.0.0-unknown';
}

export const VERSION = packageVersion();
