// Turning directories on disk into layer entries, and the handful of files a
// root filesystem needs that no package provides (dpkg's maintainer scripts,
// which would create some of them, never run here).
import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import type { TarEntry } from '../../pkg/oci/tar.js';

/** Whether a path (relative to the walked root, `/`-separated) goes in the layer. */
export type Keep = (rel: string, isDir: boolean) => boolean;

/**
 * Every file, directory and symlink under `root`, placed under `prefix` in the
 * layer, owned by root unless `owner` says otherwise; modes as on disk.
 */
export async function walk(
  root: string,
  prefix: string,
  keep: Keep = () => true,
  owner?: (rel: string) => { uid: number; gid: number } | undefined,
): Promise<TarEntry[]> {
  const out: TarEntry[] = [];
  const visit = async (rel: string): Promise<void> => {
    const names = (await readdir(path.join(root, rel))).sort();
    for (const name of names) {
      const r = rel ? `${rel}/${name}` : name;
      const abs = path.join(root, r);
      const st = await lstat(abs);
      if (!keep(r, st.isDirectory())) continue;
      const dest = prefix ? `${prefix}/${r}` : r;
      const own = owner?.(r) ?? { uid: 0, gid: 0 };
      const mode = st.mode & 0o7777;
      if (st.isDirectory()) {
        out.push({ path: dest, type: 'dir', mode, ...own });
        await visit(r);
      } else if (st.isSymbolicLink()) {
        out.push({ path: dest, type: 'symlink', mode: 0o777, linkname: await readlink(abs), ...own });
      } else if (st.isFile()) {
        out.push({ path: dest, type: 'file', mode, source: abs, size: st.size, ...own });
      }
      // Devices, sockets and fifos have no place in these images.
    }
  };
  await visit('');
  return out;
}

/** Adds the missing parent directories (0755, root) of every entry. */
export function withParents(entries: readonly TarEntry[]): TarEntry[] {
  const have = new Set(entries.map((e) => e.path));
  const out = [...entries];
  for (const e of entries) {
    const parts = e.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      if (have.has(p)) continue;
      have.add(p);
      out.push({ path: p, type: 'dir', mode: 0o755 });
    }
  }
  return out;
}

export const file = (p: string, content: string, mode = 0o644): TarEntry => ({
  path: p,
  type: 'file',
  mode,
  data: Buffer.from(content),
});
export const dir = (p: string, mode = 0o755, uid = 0, gid = 0): TarEntry => ({
  path: p,
  type: 'dir',
  mode,
  uid,
  gid,
});
export const symlink = (p: string, target: string): TarEntry => ({
  path: p,
  type: 'symlink',
  mode: 0o777,
  linkname: target,
});

/** The unprivileged user the chart's securityContext runs the controller as. */
export const APP_UID = 1000;
/** Envoy's user in injected pods (pkg/injector PROXY_UID); named here so tools can show it. */
export const PROXY_UID = 1500;

/** Users, groups, writable directories and the links dpkg's alternatives would have made. */
export function baseFiles(): TarEntry[] {
  return [
    file(
      'etc/passwd',
      'root:x:0:0:root:/root:/bin/sh\n' +
        `skein:x:${APP_UID}:${APP_UID}:skein:/home/skein:/bin/sh\n` +
        `envoy:x:${PROXY_UID}:${PROXY_UID}:envoy:/nonexistent:/bin/sh\n` +
        'nobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n',
    ),
    file('etc/group', `root:x:0:\nskein:x:${APP_UID}:\nenvoy:x:${PROXY_UID}:\nnogroup:x:65534:\n`),
    // glibc's built-in default would try DNS before /etc/hosts.
    file(
      'etc/nsswitch.conf',
      'passwd: files\ngroup: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n',
    ),
    dir('root', 0o700),
    dir('home/skein', 0o755, APP_UID, APP_UID),
    dir('tmp', 0o1777),
    dir('run', 0o755),
    dir('var/lib/skein', 0o755, APP_UID, APP_UID),
  ];
}
