// Local mode has no API server to keep bootstrap Secrets: the webhook (when
// --webhook-port is given there) writes each one as a JSON manifest under the
// state dir instead, `<dir>/<namespace>/<name>.json`, readable only by the user.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../certificate/builtin.js';
import type { SecretManifest } from './mutate.js';
import type { SecretWriter } from './webhook.js';

export class FileSecretWriter implements SecretWriter {
  constructor(readonly dir: string) {}

  async create(secret: SecretManifest): Promise<void> {
    const { namespace, name } = secret.metadata;
    // Both are API-validated DNS labels in a cluster; here they come from a request, so refuse path tricks.
    if (/[/\\]|^\.\.?$/.test(namespace) || /[/\\]|^\.\.?$/.test(name))
      throw new Error(`refusing to write Secret ${namespace}/${name}: not a plain name`);
    const dir = path.join(this.dir, namespace);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(path.join(dir, `${name}.json`), `${JSON.stringify(secret, null, 2)}\n`, 0o600);
  }
}
