import diagnosticsChannel from 'node:diagnostics_channel';

/** How many undici requests of this process were waiting for their answer, while watched. */
export interface InFlightWatch {
  /** Stops watching; the most at once, and the time-weighted mean over the watched span's busy part. */
  stop(): { readonly max: number; readonly mean: number };
}

/**
 * Counts the undici requests of this process from creation to the arrival of their response
 * headers, through undici's diagnostics channels (nothing in the product is touched): the way to
 * check that a pool and a runner really keep `concurrency` requests waiting on a slow upstream.
 */
export function watchUndiciInFlight(): InFlightWatch {
  let current = 0;
  let max = 0;
  let weighted = 0;
  let busySince = 0;
  let busyMs = 0;
  let lastChange = performance.now();
  const change = (delta: number) => {
    const now = performance.now();
    weighted += current * (now - lastChange);
    if (current > 0) busyMs += now - lastChange;
    lastChange = now;
    current = Math.max(0, current + delta);
    max = Math.max(max, current);
    if (current > 0 && busySince === 0) busySince = now;
  };
  const onCreate = () => change(1);
  const onDone = () => change(-1);
  diagnosticsChannel.subscribe('undici:request:create', onCreate);
  diagnosticsChannel.subscribe('undici:request:headers', onDone);
  diagnosticsChannel.subscribe('undici:request:error', onDone);
  return {
    stop() {
      change(0);
      diagnosticsChannel.unsubscribe('undici:request:create', onCreate);
      diagnosticsChannel.unsubscribe('undici:request:headers', onDone);
      diagnosticsChannel.unsubscribe('undici:request:error', onDone);
      return { max, mean: busyMs > 0 ? weighted / busyMs : 0 };
    },
  };
}
