/**
 * What `work` settles to, or, when it has not settled within `ms`, what `late` gives (or throws).
 * The timer is cleared either way, so it keeps no process alive; `work` stays subscribed to, so
 * its rejection after the time is up is handled, not left unhandled. For a question to Redis or a
 * readiness check that must not hold up an answer.
 */
export async function settleWithin<T, L>(work: Promise<T>, ms: number, late: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<L>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (error) {
        reject(error);
      }
    }, ms);
  });
  try {
    return await Promise.race([work, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
