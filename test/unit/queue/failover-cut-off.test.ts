import { describe, expect, it } from 'vitest';
import { isFailoverCutOff } from '../../../src/queue/failover-cut-off.js';

describe('isFailoverCutOff', () => {
  it("takes Redis's answer to a wait cut off by its node turning replica for a failover", () => {
    // As Redis 7 words it (seen from a worker waiting for jobs during CLUSTER FAILOVER).
    const reply = Object.assign(new Error('UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)'), { name: 'ReplyError' });
    expect(isFailoverCutOff(reply)).toBe(true);
  });

  it('leaves every other Redis error a fault: a CLIENT UNBLOCK by hand, a refused write, a lost connection', () => {
    expect(isFailoverCutOff(new Error('UNBLOCKED client unblocked via CLIENT UNBLOCK'))).toBe(false);
    expect(isFailoverCutOff(new Error("READONLY You can't write against a read only replica."))).toBe(false);
    expect(isFailoverCutOff(new Error('Connection is closed.'))).toBe(false);
    expect(isFailoverCutOff('UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)')).toBe(false);
  });
});
