/**
 * Node flags the controller is launched with: the image's entrypoint (cmd/skein-image,
 * the Dockerfile), `make start`, the bin's shebang and the bench. V8 grows each of the
 * young generation's two semi-spaces to 16 MB during the start's allocation burst
 * (manifests or API lists parsed and validated, certificates issued) and keeps them;
 * capped the controller is ready ~25 MB smaller at 2,000 proxies. 4 MB, not 2: the
 * reconnect storm (2,000 streams' first requests at once) cost 15.8–17.3 s of CPU
 * with 2 MB against 13.0–13.6 s uncapped, and the ready RSS was the same with 2 and 4
 * (1 MB cost 16 % of convergence CPU; docs/performance.md "Memory before the first proxy").
 */
export const CONTROLLER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];
