/**
 * The jobs whose processor is running in this process. A worker's close waits for them; once there
 * are none, what is left of the close is BullMQ recording the last outcomes (see `closeWorker`).
 */
export class JobsInFlight {
  #count = 0;

  get count(): number {
    return this.#count;
  }

  /** Runs `work`, counted as in flight until it settles. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    this.#count++;
    try {
      return await work();
    } finally {
      this.#count--;
    }
  }
}
