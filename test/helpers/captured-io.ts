import { Writable } from 'node:stream';
import type { CliIo } from '../../src/cli/cli-io.js';

/** A writable that keeps what it is given. */
export class CapturedStream extends Writable {
  text = '';
  isTTY = false;

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    callback();
  }
}

/** CLI streams and a log sink that tests can read afterwards. */
export function capturedIo(env: Record<string, string | undefined>, cwd: string): CliIo & { stdout: CapturedStream; stderr: CapturedStream; logs: CapturedStream } {
  const logs = new CapturedStream();
  return {
    stdout: new CapturedStream(),
    stderr: new CapturedStream(),
    logs,
    env,
    cwd,
    logDestination: logs,
  };
}

/** The JSON log lines a run wrote. */
export function logLines(logs: CapturedStream): Record<string, unknown>[] {
  return logs.text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
