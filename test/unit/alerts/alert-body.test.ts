import { describe, expect, it } from 'vitest';
import { alertBody } from '../../../src/alerts/alert-body.js';
import type { AlertSummary } from '../../../src/alerts/alert-summary.js';
import { FailureTally, NO_FAILURES } from '../../../src/outcomes/failure-groups.js';
import { REPORT_TYPES } from '../../../src/reports/report-types.js';
import { WarningTally } from '../../../src/outcomes/warning-groups.js';

const day = (n: number) => `2024-01-${String(n).padStart(2, '0')}`;

const dayOf2024 = (n: number) => new Date(Date.UTC(2024, 0, n)).toISOString().slice(0, 10);

/** 744 forbidden slices of one portfolio (6 report types × 124 days) beside one corrupt file: the shape of a bad backfill. */
function badNight(): AlertSummary {
  const tally = new FailureTally();
  for (let d = 1; d <= 124; d += 1) {
    for (const reportType of REPORT_TYPES) {
      tally.add({ portfolioId: 1003, reportType, reportDate: dayOf2024(d) }, 'EXPORT_FORBIDDEN', `403 for portfolio 1003 on ${dayOf2024(d)}`);
    }
  }
  tally.add({ portfolioId: 1001, reportType: 'constituent.close', reportDate: day(5) }, 'FILE_INVALID', 'line 7, column Closing Price: "12,5" is not a decimal');
  return {
    kind: 'backfill',
    title: 'backfill of 2024-01-01 to 2024-05-03: 745 of 800 slices failed',
    counts: { loaded: 50, unchanged: 5, failed: 745 },
    failures: tally.summary(),
    details: ['warehouse postgres://db/x'],
    retryCommand: 'report-sync backfill --from 2024-01-01 --to 2024-05-03 --portfolios 1001,1003 --only-missing',
    at: new Date('2024-02-01T06:00:00Z'),
  };
}

type Block = { type: string; text?: { type: string; text: string }; elements?: { type: string; text: string }[] };

function blockTexts(body: Record<string, unknown>): string[] {
  return (body.blocks as Block[]).flatMap((block) => [block.text?.text ?? '', ...(block.elements ?? []).map((element) => element.text)]);
}

describe('alertBody, slack', () => {
  it('says the title, the counts, the failures grouped by code and portfolio, the details and the retry command', () => {
    const summary = badNight();
    const body = alertBody(summary, 'slack');
    const text = body.text as string;
    expect(text.split('\n')[0]).toBe(`*${summary.title}*`);
    expect(text).toContain('50 loaded · 5 unchanged · 745 failed');
    expect(text).toContain('*EXPORT_FORBIDDEN*: 744 slices');
    // The alert's printed lines are the product: checked whole.
    expect(text).toContain('• portfolio 1003: 744 slices, e.g. constituent.close 2024-01-01, constituent.open 2024-01-01, index 2024-01-01');
    expect(text).toContain('EXPORT_FORBIDDEN: 403 for portfolio 1003 on 2024-01-01');
    expect(text).toContain('*FILE_INVALID*: 1 slice');
    expect(text).toContain('FILE_INVALID: line 7, column Closing Price: "12,5" is not a decimal');
    expect(text).toContain('warehouse postgres://db/x');
    expect(text).toContain(`\`${summary.retryCommand}\``);
    // The forbidden portfolio's 744 slices are one group: the message stays short.
    expect(text.split('\n').length).toBeLessThan(12);

    const blocks = body.blocks as Block[];
    expect(blocks[0]).toEqual({ type: 'section', text: { type: 'mrkdwn', text: `*${summary.title}*` } });
    expect(blocks.at(-1)).toEqual({ type: 'context', elements: [{ type: 'mrkdwn', text: `Re-run what failed: \`${summary.retryCommand}\`` }] });
    expect(blockTexts(body).join('\n')).toContain('*EXPORT_FORBIDDEN*: 744 slices');
  });

  it('escapes Slack control characters and control characters from upstream text everywhere', () => {
    const tally = new FailureTally();
    tally.add({ portfolioId: 7, reportType: 'index', reportDate: day(2) }, 'FILE_INVALID', 'bad <script>alert(1)</script> & <!channel>\u001b]0;owned\u0007\r\nforged: line');
    const body = alertBody(
      {
        kind: 'run',
        title: 'run <!here> & co',
        counts: { failed: 1 },
        failures: tally.summary(),
        details: ['see <http://evil|here>\u0000'],
        retryCommand: 'report-sync run',
        at: new Date(),
      },
      'slack',
    );
    const all = [body.text as string, ...blockTexts(body)].join('\n');
    expect(all).not.toContain('<script>');
    expect(all).not.toContain('<!channel>');
    expect(all).not.toContain('<!here>');
    expect(all).not.toContain('<http://evil');
    expect(all).not.toMatch(/[<>]/);
    expect(all).not.toMatch(/&(?!amp;|lt;|gt;)/);
    expect(all).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    // The escaped text itself is what is checked.
    expect(body.text).toContain('FILE_INVALID: bad &lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;!channel&gt;\\x1b]0;owned\\x07\\x0d\\x0aforged: line');
    expect(body.text).toContain('*run &lt;!here&gt; &amp; co*');
  });

  it('stays within Slack limits however many codes and portfolios failed, and counts what it leaves out', () => {
    const tally = new FailureTally();
    for (let code = 0; code < 20; code += 1) {
      for (let portfolio = 1; portfolio <= 10; portfolio += 1) {
        tally.add({ portfolioId: portfolio, reportType: 'index', reportDate: day(1) }, `CODE_${String(code).padStart(2, '0')}`, `${'x&'.repeat(2_000)}`);
      }
    }
    const body = alertBody({ kind: 'nightly', title: 't'.repeat(5_000), counts: {}, failures: tally.summary(), details: ['d'.repeat(10_000)], at: new Date() }, 'slack');
    const text = body.text as string;
    expect(text).toContain('• … 4 more portfolios (4 slices)');
    expect(text).toContain('… 8 more codes (80 slices)');
    expect(text.match(/^\*CODE_\d\d\*/gm)).toHaveLength(12);
    expect(text.length).toBeLessThan(40_000);
    // What was left out is said even when the failure sections had to give way.
    expect(text).toMatch(/\n… 8 more codes \(80 slices\)\nd{299}…$/);
    const blocks = body.blocks as Block[];
    expect(blocks.length).toBeLessThanOrEqual(50);
    for (const blockText of blockTexts(body)) {
      expect(blockText.length).toBeLessThanOrEqual(3_000);
      // Cut text never ends in half an entity.
      expect(blockText).not.toMatch(/&[a-z]{0,3}…/);
    }
    // Each reason is cut to about 300 characters.
    const reason = text.split('\n').find((line) => line.includes('CODE_00: x&amp;'))!;
    expect(reason.trim().length).toBeLessThanOrEqual(300);
    expect(reason.trim().endsWith('…')).toBe(true);
  });

  it('leaves out what does not apply', () => {
    const body = alertBody({ kind: 'check', title: 'all fresh', counts: {}, failures: NO_FAILURES, at: new Date() }, 'slack');
    expect(body.text).toBe('*all fresh*');
    expect(body.blocks).toEqual([{ type: 'section', text: { type: 'mrkdwn', text: '*all fresh*' } }]);
  });
});

describe('alertBody, json', () => {
  it('gives the summary fields as data, messages made printable', () => {
    const tally = new FailureTally();
    tally.add({ portfolioId: 1003, reportType: 'index', reportDate: day(2) }, 'EXPORT_FORBIDDEN', '403\r\nforged');
    tally.add({ portfolioId: 1003, reportType: 'index', reportDate: day(1) }, 'EXPORT_FORBIDDEN', '403');
    const body = alertBody(
      {
        kind: 'night',
        title: 'night of 2024-01-02: 2 of 4 slices failed',
        counts: { loaded: 1, noData: 1, failed: 2, notAttempted: 0 },
        failures: tally.summary(),
        details: ['a <b>'],
        retryCommand: 'report-sync backfill --only-missing',
        at: new Date('2024-01-03T05:00:00Z'),
      },
      'json',
    );
    expect(body).toEqual({
      source: 'report-sync',
      kind: 'night',
      title: 'night of 2024-01-02: 2 of 4 slices failed',
      at: '2024-01-03T05:00:00.000Z',
      counts: { loaded: 1, noData: 1, failed: 2, notAttempted: 0 },
      failures: {
        total: 2,
        groups: [
          {
            code: 'EXPORT_FORBIDDEN',
            portfolioId: 1003,
            slices: 2,
            examples: [
              { portfolioId: 1003, reportType: 'index', reportDate: day(1), message: '403' },
              { portfolioId: 1003, reportType: 'index', reportDate: day(2), message: '403\\x0d\\x0aforged' },
            ],
          },
        ],
      },
      details: ['a <b>'],
      retryCommand: 'report-sync backfill --only-missing',
    });
    // It is sent as JSON: it must survive the round trip.
    expect(JSON.parse(JSON.stringify(body))).toEqual(body);
  });
});

describe('alertBody, slices loaded with warnings and where the alert comes from', () => {
  /** A night whose only trouble is two portfolios' weights that do not sum to 1, and one portfolio's drop in rows. */
  function warnedNight(): AlertSummary {
    const tally = new WarningTally();
    const warning = (check: string, measured: number, threshold: number, message: string) => ({ check, measured, threshold, message });
    for (let d = 1; d <= 20; d += 1) {
      tally.add({ portfolioId: 1001, reportType: 'constituent.close', reportDate: day(d) }, [
        warning('weightsSum', 0.04 + d / 100, 0.001, `weightsSum: the weights sum to ${1.04 + d / 100}`),
      ]);
    }
    tally.add({ portfolioId: 1002, reportType: 'constituent.close', reportDate: day(3) }, [
      warning('weightsSum', 0.91, 0.001, 'weightsSum: the weights sum to 1.91'),
      warning('rowCountDrop', 0.5, 0.25, 'rowCountDrop: 2 rows against 4 on 2024-01-02'),
    ]);
    return {
      kind: 'night',
      title: 'report-sync nightly of 2024-01-20: 21 of 40 slices loaded with warnings',
      counts: { loaded: 40, warned: 21, failed: 0 },
      failures: NO_FAILURES,
      warnings: tally.summary(),
      at: new Date('2024-01-21T06:00:00Z'),
      origin: { host: 'worker-3.eu', deployment: 'reports-eu' },
    };
  }

  it('slack: the host and deployment under the title, then the warnings by check and portfolio with the values measured, one message', () => {
    const body = alertBody(warnedNight(), 'slack');
    const text = body.text as string;
    const lines = text.split('\n');
    expect(lines[1]).toBe('deployment reports-eu · host worker-3.eu');
    expect(lines[2]).toBe('40 loaded · 21 loaded with warnings · 0 failed');
    expect(text).toContain('*Loaded with warnings: weightsSum*: 21 slices');
    // The alert's printed lines are the product: checked whole.
    expect(text).toContain(
      '• portfolio 1001: 20 slices, measured 0.05 to 0.24 (limit 0.001), e.g. constituent.close 2024-01-01, constituent.close 2024-01-02, constituent.close 2024-01-03',
    );
    expect(text).toContain('• portfolio 1002: 1 slice, measured 0.91 (limit 0.001), e.g. constituent.close 2024-01-03');
    expect(text).toContain('*Loaded with warnings: rowCountDrop*: 1 slice');
    expect(text).toContain('weightsSum: the weights sum to 1.05');
    expect(blockTexts(body)).toContain('deployment reports-eu · host worker-3.eu');
    expect(text.split('\n').length).toBeLessThan(15);
  });

  it('json: host, deployment and the warnings, grouped with the values measured', () => {
    const body = alertBody(warnedNight(), 'json');
    expect(body).toMatchObject({ host: 'worker-3.eu', deployment: 'reports-eu', counts: { loaded: 40, warned: 21, failed: 0 } });
    const warnings = body.warnings as {
      slices: number;
      groups: { check: string; portfolioId: number; slices: number; measured: { min: number; max: number }; threshold: number }[];
    };
    expect(warnings.slices).toBe(21);
    expect(warnings.groups.map((group) => [group.check, group.portfolioId, group.slices, group.threshold])).toEqual([
      ['weightsSum', 1001, 20, 0.001],
      ['weightsSum', 1002, 1, 0.001],
      ['rowCountDrop', 1002, 1, 0.25],
    ]);
    expect(warnings.groups[0]!.measured.min).toBeCloseTo(0.05, 12);
    expect(warnings.groups[0]!.measured.max).toBeCloseTo(0.24, 12);
  });

  it('escapes a deployment name from outside, as every text', () => {
    const body = alertBody({ ...warnedNight(), origin: { host: 'h', deployment: '<!channel> \u001b[2J' } }, 'slack');
    expect(body.text as string).toContain('deployment &lt;!channel&gt;');
    expect(body.text as string).not.toMatch(/<!channel>|\u001b/);
  });
});
