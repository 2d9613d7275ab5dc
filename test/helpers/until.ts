/** Waits until `condition` holds, checking every `everyMs`; fails naming `what` after `timeoutMs`. */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
