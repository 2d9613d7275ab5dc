// Loaded with `node --import` into a process whose clock must be off by REPORT_SYNC_TEST_CLOCK_OFFSET_MS
// (negative: behind), as on a machine whose clock drifted: Date.now() and `new Date()` shift, timers do not.
const offsetMs = Number(process.env.REPORT_SYNC_TEST_CLOCK_OFFSET_MS ?? 0);
const RealDate = Date;
class OffsetDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + offsetMs);
    else super(...args);
  }
  static now() {
    return RealDate.now() + offsetMs;
  }
}
globalThis.Date = OffsetDate;
