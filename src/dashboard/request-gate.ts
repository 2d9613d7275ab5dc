import type { NextFunction, Request, RequestHandler, Response } from 'express';

export interface RequestGateOptions {
  /** Requests let through at once. */
  readonly concurrent: number;
  /** Requests that may wait for one of those to finish; any more are answered 503 at once. */
  readonly waiting: number;
  /** Longest a request waits before it is answered 503 instead, in milliseconds. */
  readonly maxWaitMs: number;
  /** Seconds a refused request is told to wait (`Retry-After`). */
  readonly retryAfterSeconds: number;
}

/**
 * Lets a few costly requests run at once, a few more wait briefly, and answers the rest 503 with
 * `Retry-After`: the dashboard holds a few grids' memory at most, every request is answered in
 * bounded time, and the cheap routes outside the gate stay answered.
 */
export class RequestGate {
  readonly #options: RequestGateOptions;
  #running = 0;
  readonly #waiting: (() => void)[] = [];
  readonly #turns: (() => void)[] = [];

  constructor(options: RequestGateOptions) {
    this.#options = options;
  }

  /**
   * Resolves on a later turn of the event loop, one caller per turn: a costly request awaits it
   * between its steps. SQLite answers synchronously, so two grids' queries, each resumed by the
   * other's, would otherwise run back to back and keep every other request out until both were done.
   */
  nextTurn(): Promise<void> {
    return new Promise((resolve) => {
      this.#turns.push(resolve);
      if (this.#turns.length === 1) this.#scheduleTurn();
    });
  }

  #scheduleTurn(): void {
    setImmediate(() => {
      this.#turns.shift()!();
      // Scheduled from this callback, the next turn comes after the event loop has polled again.
      if (this.#turns.length > 0) this.#scheduleTurn();
    });
  }

  /** Requests waiting for a place now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** The Express middleware that holds a request at the gate until it may run. */
  readonly handler: RequestHandler = (_req: Request, res: Response, next: NextFunction) => {
    const start = () => {
      this.#running += 1;
      // 'close' comes once the answer is sent or the client has gone, whichever is first.
      res.once('close', () => {
        this.#running -= 1;
        // On a turn of its own (see nextTurn), not straight after the answer just sent.
        void this.nextTurn().then(() => this.#startWaiting());
      });
      next();
    };
    if (this.#running < this.#options.concurrent && this.#waiting.length === 0) {
      start();
      return;
    }
    if (this.#waiting.length >= this.#options.waiting) {
      this.#refuse(res);
      return;
    }
    const leave = () => {
      clearTimeout(timer);
      const index = this.#waiting.indexOf(admit);
      if (index >= 0) this.#waiting.splice(index, 1);
    };
    const admit = () => {
      clearTimeout(timer);
      res.off('close', leave);
      start();
    };
    const timer = setTimeout(() => {
      leave();
      res.off('close', leave);
      this.#refuse(res);
    }, this.#options.maxWaitMs);
    this.#waiting.push(admit);
    // A client that leaves while waiting gives its place up.
    res.once('close', leave);
  };

  #refuse(res: Response): void {
    const { retryAfterSeconds } = this.#options;
    res
      .status(503)
      .set('Retry-After', String(retryAfterSeconds))
      .json({ error: `the dashboard is busy with ${this.#running + this.#waiting.length} other requests of this kind; try again in ${retryAfterSeconds} s` });
  }

  #startWaiting(): void {
    while (this.#running < this.#options.concurrent && this.#waiting.length > 0) this.#waiting.shift()!();
  }
}
