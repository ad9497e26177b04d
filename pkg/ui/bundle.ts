// Build step (run by `make build` after tsc): bundles the browser page with
// esbuild into dist/pkg/ui/web/, next to the compiled routes.js that serves
// it. Everything the page needs is in the bundle, so it works offline.
//
//   node dist/pkg/ui/bundle.js
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url)); // dist/pkg/ui
const repoRoot = path.resolve(here, '..', '..', '..');
const source = path.join(repoRoot, 'pkg', 'ui', 'web');
const out = path.join(here, 'web');

await mkdir(out, { recursive: true });
await build({
  entryPoints: [path.join(source, 'app.ts')],
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2020',
  minify: true,
  sourcemap: 'linked',
  tsconfig: path.join(source, 'tsconfig.json'),
  outfile: path.join(out, 'app.js'),
  logLevel: 'warning',
});
for (const f of ['index.html', 'app.css']) await copyFile(path.join(source, f), path.join(out, f));
