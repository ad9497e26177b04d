// The OCI archives the test node imports: what `make image test-images` writes
// under out/images/ (cmd/skein-image). $SKEIN_NODE_IMAGES (a colon-separated list
// of archives) replaces the list, e.g. to try the node with a pause image alone.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/support → repository root.
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const IMAGES_DIR = path.join(repoRoot, 'out', 'images');

/** pause (the sandbox image), the controller (also the init image), Envoy and the test apps. */
export const NODE_IMAGE_ARCHIVES = ['pause', 'controller', 'envoy', 'app'] as const;

export function nodeImages(): string[] {
  const override = process.env['SKEIN_NODE_IMAGES'];
  if (override) return override.split(':').filter(Boolean);
  return NODE_IMAGE_ARCHIVES.map((name) => path.join(IMAGES_DIR, `${name}.oci.tar`));
}
