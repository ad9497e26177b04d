/**
 * Node flags the controller is launched with: the image's entrypoint (cmd/skein-image,
 * the Dockerfile), `make start`, the bin's shebang and the bench. V8 grows each of the
 * young generation's two semi-spaces to 16 MB during the start's allocation burst
 * (manifests or API lists parsed and validated, certificates issued) and keeps them;
 * capped at 2 MB the controller is ready ~25 MB smaller at 2,000 proxies, for a
 * convergence CPU within the bench's noise (1 MB cost 16 %; docs/performance.md
 * "Memory before the first proxy").
 */
export const CONTROLLER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];
