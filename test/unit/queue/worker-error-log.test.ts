import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/logging/logger.js';
import { isFailoverCutOff, workerErrorLog } from '../../../src/queue/worker-error-log.js';

// As Redis 7 words it, to a worker waiting for jobs on a master that CLUSTER FAILOVER turns replica.
const UNBLOCKED = 'UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)';
const cutOff = () => Object.assign(new Error(UNBLOCKED), { name: 'ReplyError' });

function logged(options: { redisDown?: boolean } = {}) {
  const lines: { level: number; msg: string; err?: { message: string; stack?: string }; redisReply?: string }[] = [];
  const logger = createLogger({ level: 'info', pretty: false, destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
  let clock = 0;
  const log = workerErrorLog({ logger, redisDown: () => options.redisDown === true, now: () => clock });
  return { lines, log, at: (ms: number) => (clock = ms) };
}

describe('isFailoverCutOff', () => {
  it("takes Redis's answer to a wait cut off by its node turning replica for a failover", () => {
    expect(isFailoverCutOff(cutOff())).toBe(true);
  });

  it('leaves every other Redis error a fault: a CLIENT UNBLOCK by hand, a refused write, a lost connection', () => {
    expect(isFailoverCutOff(new Error('UNBLOCKED client unblocked via CLIENT UNBLOCK'))).toBe(false);
    expect(isFailoverCutOff(new Error("READONLY You can't write against a read only replica."))).toBe(false);
    expect(isFailoverCutOff(new Error('Connection is closed.'))).toBe(false);
    expect(isFailoverCutOff(UNBLOCKED)).toBe(false);
  });
});

describe('workerErrorLog', () => {
  it('logs a worker error with its stack, and holds back the next ones for 10 s', () => {
    const { lines, log, at } = logged();
    log(new Error('ERR something odd'));
    at(9_999);
    log(new Error('ERR again'));
    at(10_000);
    log(new Error('ERR later'));
    expect(lines.map((line) => [line.level, line.msg, line.err?.message])).toEqual([
      [50, 'worker error', 'ERR something odd'],
      [50, 'worker error', 'ERR later'],
    ]);
    expect(lines[0]!.err!.stack).toContain('ERR something odd');
  });

  it('says a failover cut off the wait for jobs as one warning without a stack, whatever error came just before or after', () => {
    const { lines, log, at } = logged();
    log(new Error('ERR something odd'));
    at(1_000);
    log(cutOff());
    at(2_000);
    log(cutOff());
    at(10_500);
    log(new Error('ERR after the failover'));
    expect(lines.map((line) => [line.level, line.msg])).toEqual([
      [50, 'worker error'],
      [40, "the queue's Redis master was replaced (a failover): the wait for jobs it cut off goes on with the new master"],
      [40, "the queue's Redis master was replaced (a failover): the wait for jobs it cut off goes on with the new master"],
      [50, 'worker error'],
    ]);
    expect(lines[1]).toMatchObject({ redisReply: UNBLOCKED });
    expect(lines[1]!.err).toBeUndefined();
  });

  it('logs nothing while Redis is down, where its outage has a line of its own', () => {
    const { lines, log } = logged({ redisDown: true });
    log(new Error('Connection is closed.'));
    log(cutOff());
    expect(lines).toEqual([]);
  });
});
