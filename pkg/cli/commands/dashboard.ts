// `skein dashboard`: the controller's web view (/ui/ on its HTTP port), directly
// (--controller-url, --local) or through a port-forward to the controller pod,
// which stays open until Ctrl-C.
import { spawn } from 'node:child_process';
import {
  CONTROL_PLANE_NAMESPACE_FLAG,
  CONTROLLER_URL_FLAG,
  controllerEndpoint,
  LOCAL_FLAG,
} from '../controller.js';
import { errorMessage } from '../errors.js';
import type { CommandSpec, RunContext } from '../spec.js';

/** The platform's "open this URL" command, or undefined where we know none. */
export function opener(platform: NodeJS.Platform): string | undefined {
  if (platform === 'darwin') return 'open';
  if (platform === 'linux' || platform === 'freebsd' || platform === 'openbsd') return 'xdg-open';
  return undefined;
}

function openBrowser(url: string, ctx: RunContext): void {
  const cmd = opener(process.platform);
  const fail = (why: string) => ctx.io.err(`could not open a browser (${why}); open ${url} yourself\n`);
  if (!cmd) {
    fail(`no opener known for ${process.platform}`);
    return;
  }
  try {
    const child = spawn(cmd, [url], { stdio: 'ignore', detached: true });
    child.on('error', (err) => fail(`${cmd}: ${err.message}`));
    child.unref();
  } catch (err) {
    fail(errorMessage(err));
  }
}

async function run(ctx: RunContext): Promise<number> {
  const ep = await controllerEndpoint(ctx);
  try {
    const url = `${ep.url}/ui/`;
    // A quick look first: a 404 means the debug server (and with it the UI) is off.
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      await res.body?.cancel();
      if (res.status === 404)
        ctx.io.err(
          `warning: the controller at ${ep.via} does not serve /ui/: its debug server is off (set spec.observability.enableDebugServer: true in the MeshConfig, or run the controller with --debug)\n`,
        );
      else if (!res.ok) ctx.io.err(`warning: ${url} answered HTTP ${res.status}\n`);
    } catch (err) {
      ctx.io.err(`warning: ${url} did not answer: ${errorMessage(err)}\n`);
    }
    ctx.io.out(`skein dashboard: ${url}${ep.via === ep.url ? '' : ` (${ep.via})`}\nPress Ctrl-C to stop.\n`);
    if (!ctx.flags.boolean('no-browser')) openBrowser(url, ctx);
    await new Promise<void>((resolve) => {
      if (ctx.io.signal.aborted) return resolve();
      // A direct URL leaves nothing open: this timer keeps the process up until Ctrl-C.
      const keepAlive = setInterval(() => {}, 1 << 30);
      ctx.io.signal.addEventListener(
        'abort',
        () => {
          clearInterval(keepAlive);
          resolve();
        },
        { once: true },
      );
    });
    return 0;
  } finally {
    await ep.close();
  }
}

export const dashboardCommand: CommandSpec = {
  name: 'dashboard',
  summary: "Open the controller's live web view of the mesh",
  maxArgs: 0,
  flags: [
    CONTROLLER_URL_FLAG,
    LOCAL_FLAG,
    CONTROL_PLANE_NAMESPACE_FLAG,
    { name: 'no-browser', type: 'boolean', description: 'Print the URL only; do not start a browser' },
  ],
  examples: [
    'skein dashboard',
    'skein dashboard --local',
    'skein dashboard --controller-url http://10.0.0.5:9091 --no-browser',
  ],
  run,
};
