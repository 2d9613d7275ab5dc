import type { NextFunction, Request, RequestHandler, Response } from 'express';

export interface RequestGateOptions {
  /** Requests let through at once. */
  readonly concurrent: number;
  /** Requests that wait for one of those to finish; any more are answered 503 at once. */
  readonly waiting: number;
  /** Seconds a refused request is told to wait (`Retry-After`). */
  readonly retryAfterSeconds: number;
}

/**
 * Lets a few costly requests (the coverage grid, the failures) run at once, queues a few more, and
 * answers the rest 503 with `Retry-After`: however many such requests arrive together, the
 * dashboard holds the memory of a few grids, and its cheap routes, outside the gate, stay answered.
 */
export class RequestGate {
  readonly #options: RequestGateOptions;
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(options: RequestGateOptions) {
    this.#options = options;
  }

  /** The Express middleware that holds a request at the gate until it may run. */
  readonly handler: RequestHandler = (_req: Request, res: Response, next: NextFunction) => {
    const start = () => {
      this.#running += 1;
      // 'close' comes once the answer is sent or the client has gone, whichever is first.
      res.once('close', () => {
        this.#running -= 1;
        this.#startWaiting();
      });
      next();
    };
    if (this.#running < this.#options.concurrent) {
      start();
      return;
    }
    if (this.#waiting.length >= this.#options.waiting) {
      res
        .status(503)
        .set('Retry-After', String(this.#options.retryAfterSeconds))
        .json({ error: `the dashboard is busy with ${this.#running + this.#waiting.length} other requests of this kind; try again in ${this.#options.retryAfterSeconds} s` });
      return;
    }
    this.#waiting.push(start);
    // A client that leaves while waiting gives its place up.
    res.once('close', () => {
      const index = this.#waiting.indexOf(start);
      if (index >= 0) this.#waiting.splice(index, 1);
    });
  };

  #startWaiting(): void {
    while (this.#running < this.#options.concurrent && this.#waiting.length > 0) this.#waiting.shift()!();
  }
}
