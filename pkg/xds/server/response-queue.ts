import type * as grpc from '@grpc/grpc-js';

/**
 * The responses a raw test client received and not taken yet, in arrival
 * order, with a wait for the next one that gives up when the stream ends.
 */
export class ResponseQueue<T> {
  private readonly items: T[] = [];
  private waiter: (() => void) | undefined;
  private ended = false;

  /**
   * Follows a call: resolves with its final status (which also ends the
   * queue); call errors are reported through that status only.
   */
  follow(call: grpc.ClientDuplexStream<never, Buffer>): Promise<grpc.StatusObject> {
    call.on('error', () => {
      // Reported through the status.
    });
    return new Promise((resolve) => {
      call.on('status', (s: grpc.StatusObject) => {
        resolve(s);
        this.end();
      });
    });
  }

  push(item: T): void {
    this.items.push(item);
    this.waiter?.();
  }

  /** No more responses will come: a waiting next() rejects once the queue is empty. */
  end(): void {
    this.ended = true;
    this.waiter?.();
  }

  /** The next response; rejects after `timeoutMs` or when the stream ends first. */
  async next(timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = this.items.shift();
      if (r) return r;
      if (this.ended) throw new Error('stream ended while waiting for a response');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no response within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(t);
          this.waiter = undefined;
          resolve();
        };
      });
    }
  }

  /** Waits `ms` and returns whatever arrived meanwhile. */
  async drain(ms: number): Promise<T[]> {
    await new Promise((r) => setTimeout(r, ms));
    return this.items.splice(0);
  }
}
