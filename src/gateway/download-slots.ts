/**
 * The downloads one process runs at once (`concurrency`): a download takes a slot before its
 * request and gives it back once its body is all in or it failed, and waits in turn while every
 * slot is taken. Slices past their download (waiting for the warehouse, or being written) hold
 * none, so a worker holding more jobs than downloads keeps the service busy while the warehouse
 * writes (see `jobsAtOnce`).
 */
export class DownloadSlots {
  #free: number;
  readonly #waiting = new Map<() => void, (reason: unknown) => void>();
  readonly #signal: AbortSignal | undefined;

  /**
   * `signal` (the process's shutdown) ends every wait: one listener for all the waiters, since a
   * worker holding more jobs than slots keeps dozens waiting, and a listener each would pass
   * Node's limit of ten and warn of a leak.
   */
  constructor(size: number, options: { readonly signal?: AbortSignal } = {}) {
    this.#free = size;
    this.#signal = options.signal;
    this.#signal?.addEventListener('abort', () => this.#abandonAll(), { once: true });
  }

  /**
   * Resolves with the slot's release once one is free, first come first served; rejects with the
   * signal's reason if it is aborted first (a shutdown), holding nothing.
   */
  acquire(): Promise<() => void> {
    if (this.#signal?.aborted) return Promise.reject(this.#signal.reason);
    if (this.#free > 0) {
      this.#free -= 1;
      return Promise.resolve(this.#release());
    }
    return new Promise((resolve, reject) => {
      this.#waiting.set(() => resolve(this.#release()), reject);
    });
  }

  #abandonAll(): void {
    const abandoned = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const reject of abandoned) reject(this.#signal?.reason);
  }

  /** A release that works once: the slot goes to the longest waiter, or back to the free ones. */
  #release(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const [next] = this.#waiting.keys();
      if (next === undefined) {
        this.#free += 1;
        return;
      }
      this.#waiting.delete(next);
      next();
    };
  }
}
