// Test helper: watches, reflectors and controllers settle asynchronously, so
// tests assert what they converge to rather than sleeping a guessed time.

/**
 * Retries `check` every `intervalMs` until it stops throwing (or rejecting);
 * after `timeoutMs`, throws its last error.
 */
export async function eventually(
  check: () => void | Promise<void>,
  timeoutMs = 4000,
  intervalMs = 10,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}
