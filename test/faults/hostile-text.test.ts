import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { onTerminal } from '../helpers/on-terminal.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';

/*
 * Text from the upstream is data, never terminal output: an error page carrying escape sequences
 * (OSC retitling the window, CSI clearing the screen, BEL) and CR/LF that would forge a line, a
 * Content-Disposition file name carrying the same (percent-encoded, as RFC 5987 allows), a JSON
 * value echoed in a message. The CLI runs on a real pseudo-terminal (util-linux `script`), where
 * its logs are pretty and its progress bar draws, and what reaches the terminal is checked byte by byte.
 */

const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\u009b31m\r\nFORGED: all slices loaded';
/** What a terminal would act on: OSC, BEL, a screen clear, a C1 CSI, a bare CR. */
const ACTED_ON = /\u001b\]|\u0007|\u001b\[2J|\u009b|\r(?!\n)/;

describe('upstream text on a real terminal', () => {
  let rig: SyncRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('escapes control sequences and line breaks from error pages, file names and values in the summary, the logs, status and the ledger', async () => {
    rig = await startSyncRig({ settings: { portfolios: [1001], reportTypes: ['index'], retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 } } });
    expect((await rig.cli(['migrate'])).code).toBe(0);
    // An error page quoted in the failure.
    rig.simulator.script(1001, 'index', '2024-01-01', [{ status: 400, body: `bad request ${HOSTILE}` }]);
    // A file name (Node will not send raw controls in a header; RFC 5987's encoding carries them) on a file that cannot be read.
    rig.simulator.script(1001, 'index', '2024-01-02', [
      {
        status: 200,
        body: '[{"effectiveDate": ',
        headers: { 'content-type': 'application/json', 'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(`evil${HOSTILE}.json`)}` },
      },
    ]);
    // A value echoed in the message of a bad record.
    rig.simulator.script(1001, 'index', '2024-01-03', [
      { status: 200, body: JSON.stringify([{ effectiveDate: '2024-01-03', indexId: 'X', indexValue: HOSTILE }]), headers: { 'content-type': 'application/json' } },
    ]);

    const run = await onTerminal('run --from 2024-01-01 --to 2024-01-03', { cwd: rig.dir, env: rig.env });
    expect(run).toMatch(/failed\s+3/);
    expect(run).not.toMatch(ACTED_ON);
    expect(run).not.toMatch(/^FORGED/m);
    // Shown, escaped, rather than dropped.
    expect(run).toContain('\\x1b]0;pwned\\x07');

    const status = await onTerminal('status --from 2024-01-01 --to 2024-01-03', { cwd: rig.dir, env: rig.env });
    expect(status).toContain('Failed slices by error code and portfolio (3 slices):');
    expect(status).not.toMatch(ACTED_ON);
    expect(status).not.toMatch(/^FORGED/m);

    const ledger = await sql<{ error: string; file_name: string | null }>`select error, file_name from report_loads order by report_date`.execute((await rig.warehouse()).db);
    expect(ledger.rows).toHaveLength(3);
    for (const row of ledger.rows) expect(row.error).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    // The failures name the file as it was given, escaped.
    expect(ledger.rows[1]!.error).toContain('evil\\x1b]0;pwned');
  }, 90_000);
});
