/**
 * The downloads one process runs at once (`concurrency`): a download takes a slot before its
 * request and gives it back once its body is all in or it failed, and waits in turn while every
 * slot is taken. Slices past their download (waiting for the warehouse, or being written) hold
 * none, so a worker holding more jobs than downloads keeps the service busy while the warehouse
 * writes (see `jobsAtOnce`).
 */
export class DownloadSlots {
  #free: number;
  readonly #waiting = new Set<() => void>();

  constructor(size: number) {
    this.#free = size;
  }

  /**
   * Resolves with the slot's release once one is free, first come first served; rejects with the
   * signal's reason if it is aborted first (a shutdown), holding nothing.
   */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#free > 0) {
      this.#free -= 1;
      return Promise.resolve(this.#release());
    }
    return new Promise((resolve, reject) => {
      const admit = () => {
        signal?.removeEventListener('abort', abandon);
        resolve(this.#release());
      };
      const abandon = () => {
        this.#waiting.delete(admit);
        reject(signal?.reason);
      };
      this.#waiting.add(admit);
      signal?.addEventListener('abort', abandon, { once: true });
    });
  }

  /** A release that works once: the slot goes to the longest waiter, or back to the free ones. */
  #release(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const [next] = this.#waiting;
      if (next === undefined) {
        this.#free += 1;
        return;
      }
      this.#waiting.delete(next);
      next();
    };
  }
}
