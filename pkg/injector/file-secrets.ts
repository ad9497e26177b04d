// Local mode has no API server to keep bootstrap Secrets: the webhook (when
// --webhook-port is given there) writes each one as a JSON manifest under the
// state dir instead, `<dir>/<namespace>/<name>.json`, readable only by the user.
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../certificate/builtin.js';
import type { BootstrapCredentialWriter } from './bootstrap-rotation.js';
import type { SecretManifest } from './mutate.js';
import type { SecretWriter } from './webhook.js';

export class FileSecretWriter implements SecretWriter, BootstrapCredentialWriter {
  constructor(readonly dir: string) {}

  async create(secret: SecretManifest): Promise<void> {
    const file = this.#file(secret.metadata.namespace, secret.metadata.name);
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await writeFileAtomic(file, `${JSON.stringify(secret, null, 2)}\n`, 0o600);
  }

  /** Rewrites keys of a manifest written earlier (its stringData); a missing manifest is an error. */
  async replace(namespace: string, name: string, data: Record<string, string>): Promise<void> {
    const file = this.#file(namespace, name);
    const secret = JSON.parse(await readFile(file, 'utf8')) as SecretManifest;
    for (const [k, v] of Object.entries(data)) secret.stringData[k] = v;
    await writeFileAtomic(file, `${JSON.stringify(secret, null, 2)}\n`, 0o600);
  }

  #file(namespace: string, name: string): string {
    // Both are API-validated DNS labels in a cluster; here they come from a request, so refuse path tricks.
    if (/[/\\]|^\.\.?$/.test(namespace) || /[/\\]|^\.\.?$/.test(name))
      throw new Error(`refusing to write Secret ${namespace}/${name}: not a plain name`);
    return path.join(this.dir, namespace, `${name}.json`);
  }
}
