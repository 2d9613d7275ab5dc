import { sql } from 'kysely';
import { resolveUpstreamConfig } from '../config/upstream-config.js';
import { countSlices, planSlices } from '../slice/slice-range.js';
import { shiftIsoDate, todayIn } from '../dates/report-date.js';
import { REPORT_TABLES } from '../reports/report-tables.js';
import { createGatewaySimulator, simulatorEnvironment } from '../simulator/gateway-simulator.js';
import { createCliLogger, loadCliConfig, type CliIo } from './cli-io.js';
import { formatTable } from './format-table.js';
import { syncSlices } from './sync-slices.js';

/** The query the demo runs afterwards, to show the tables are ready for analytics. */
export const DEMO_QUERY = `SELECT report_date,
       portfolio_id,
       COUNT(*)                       AS constituents,
       ROUND(SUM(index_weighting), 6) AS total_weighting,
       MAX(closing_price)             AS top_closing_price
FROM constituent_report
WHERE report_type = 'constituent.close'
GROUP BY report_date, portfolio_id
ORDER BY report_date, portfolio_id`;

/**
 * `report-sync demo`: starts the simulator on a free loopback port, syncs the last seven days
 * for two portfolios (`index` as JSON, `constituent.close` as ZIP/CSV) into ./data/demo.sqlite,
 * in this process, then prints the summary and one query's result.
 */
export async function demoCommand(io: CliIo): Promise<number> {
  const simulator = await createGatewaySimulator({ port: 0 });
  try {
    const config = loadCliConfig(
      io,
      {},
      {
        portfolios: [1001, 1002],
        reportTypes: ['index', 'constituent.close'],
        formats: { index: 'json', 'constituent.close': 'csv' },
        retry: { baseDelayMs: 200 },
      },
      {
        ...simulatorEnvironment(simulator),
        REPORT_TOKEN_URL: '',
        DATABASE_URL: 'sqlite:./data/demo.sqlite',
      },
    );
    const { settings } = config;
    const to = shiftIsoDate(todayIn(settings.schedule.timeZone), -1);
    const range = { from: shiftIsoDate(to, -6), to, portfolios: settings.portfolios, reportTypes: settings.reportTypes };
    const logger = createCliLogger(config, io);
    io.stdout.write(`Demo: simulator on ${simulator.url}; syncing ${range.from} to ${range.to} for portfolios ${range.portfolios.join(', ')} into data/demo.sqlite\n\n`);
    return await syncSlices({
      config,
      upstream: resolveUpstreamConfig(config.env),
      logger,
      io,
      plan: () => ({ slices: planSlices(range), planned: countSlices(range), range, description: 'demo sync' }),
      after: async (services) => {
        const totals: [string, number][] = [];
        for (const table of [...REPORT_TABLES.map((definition) => definition.table), 'report_loads' as const]) {
          const { rows } = await services.warehouse.db
            .selectFrom(table)
            .select(({ fn }) => fn.countAll<number | string>().as('rows'))
            .executeTakeFirstOrThrow();
          totals.push([table, Number(rows)]);
        }
        io.stdout.write(`\nRows in ${services.warehouse.location}:\n${formatTable(['table', 'rows'], totals)}\n`);
        const result = await sql<Record<string, unknown>>`${sql.raw(DEMO_QUERY)}`.execute(services.warehouse.db);
        const columns = result.rows[0] ? Object.keys(result.rows[0]) : [];
        io.stdout.write(
          `\nExample query:\n\n${DEMO_QUERY};\n\n${formatTable(
            columns,
            result.rows.map((row) => columns.map((c) => row[c])),
          )}\n`,
        );
      },
    });
  } finally {
    await simulator.close();
  }
}
