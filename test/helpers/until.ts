/**
 * Waits until `condition` holds, checking every `everyMs`; fails naming `what` after `timeoutMs`.
 * `what` may be a function, read only on the timeout, so a message can carry the output a process
 * had written by then rather than what it had written when the wait began.
 */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string | (() => string), everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Waits until `process` has written `text`; fails after `timeoutMs` showing what it had written by then. */
export async function untilSaid(process: { output(): string }, text: string, timeoutMs: number): Promise<void> {
  await until(
    () => process.output().includes(text),
    timeoutMs,
    () => `${JSON.stringify(text)} in the output (output so far: ${process.output()})`,
  );
}
