import { Command, CommanderError, Option } from 'commander';
import { secretValues } from '../config/secret-values.js';
import { SyncError } from '../errors/sync-error.js';
import { redactSecrets } from '../redaction/redact.js';
import { REPORT_TYPES } from '../reports/report-types.js';
import {
  parseDateArgument,
  parseErrorCodesArgument,
  parseHoursArgument,
  parsePortArgument,
  parsePortfoliosArgument,
  parsePositiveIntArgument,
  parseReportTypesArgument,
  parseSecondsArgument,
} from './cli-arguments.js';
import type { CliIo } from './cli-io.js';
import { packageVersion } from '../runtime/package-version.js';

// Each command's module is imported when it runs: `run` then never loads BullMQ, ioredis or pg's
// neighbours it does not use, which keeps a big slice's peak memory well under its budget.
const version = packageVersion();

/**
 * Runs one `report-sync` command line and resolves to its exit code: 0 all slices loaded or
 * no_data, 1 some failed, 2 bad usage or configuration (including refused credentials).
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode = 0;
  const program = new Command('report-sync')
    .description('Pulls daily portfolio reports from the Portfolio Report Export Service into a SQL warehouse.')
    .version(version)
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text) })
    .showHelpAfterError('(run report-sync help <command> for its options)');

  const configOption = () => new Option('--config <file>', 'settings file layered over config/default.json and config/local.json');
  const portfoliosOption = () => new Option('--portfolios <ids>', 'comma-separated portfolio ids (default: from config)').argParser(parsePortfoliosArgument);
  const reportTypesOption = () =>
    new Option('--report-types <types>', `comma-separated report types: ${REPORT_TYPES.join(', ')} (default: from config)`).argParser(parseReportTypesArgument);
  const fromOption = (defaultText: string) => new Option('--from <date>', `first report date, YYYY-MM-DD (default: ${defaultText})`).argParser(parseDateArgument);
  const toOption = () => new Option('--to <date>', 'last report date, included (default: yesterday)').argParser(parseDateArgument);
  const metricsPortOption = () => new Option('--metrics-port <port>', 'serve /metrics, /healthz and /readyz on this port (0: any free port)').argParser(parsePortArgument);
  const concurrencyOption = () => new Option('--concurrency <n>', 'downloads at once (default: from config)').argParser(parsePositiveIntArgument);

  program
    .command('migrate')
    .description('create or update the warehouse tables (runs automatically before every sync)')
    .addOption(configOption())
    .action(async (options) => {
      exitCode = await (await import('./migrate-command.js')).migrateCommand(options, io);
    });

  program
    .command('run')
    .description('sync every slice of a date range in this process (no Redis needed)')
    .addOption(fromOption('yesterday'))
    .addOption(toOption())
    .addOption(portfoliosOption())
    .addOption(reportTypesOption())
    .option('--only-missing', 'only the slices the ledger does not have as loaded or no_data (never attempted, or failed)')
    .option('--failed', 'only the slices whose last outcome is failed (not with --only-missing, which takes them already)')
    .addOption(new Option('--code <codes>', 'only failed slices with these error codes, comma-separated (implies --failed)').argParser(parseErrorCodesArgument))
    .option('--dry-run', 'say what would be requested and about how long it would take; request, load and write nothing')
    .option('--json', 'with --dry-run: print the plan as JSON')
    .addOption(
      new Option('--request-seconds <s>', 'with --dry-run: seconds one export request takes, for the estimate (default: an assumed figure, said in the output)').argParser(
        parseSecondsArgument,
      ),
    )
    .option('--force', 'load every file again, even one already loaded unchanged')
    .addOption(concurrencyOption())
    .addOption(metricsPortOption())
    .addOption(configOption())
    .action(async (options) => {
      exitCode = await (await import('./run-command.js')).runCommand(options, io);
    });

  program
    .command('nightly')
    .description('sync yesterday (configured time zone) and re-check missing, no_data and failed slices of the lookback window')
    .addOption(concurrencyOption())
    .addOption(metricsPortOption())
    .addOption(configOption())
    .action(async (options) => {
      exitCode = await (await import('./nightly-command.js')).nightlyCommand(options, io);
    });

  program
    .command('status')
    .description('per portfolio and report type: loaded, no_data, failed and missing slices; then the failures')
    .addOption(fromOption('start of the lookback window'))
    .addOption(toOption())
    .addOption(portfoliosOption())
    .addOption(reportTypesOption())
    .option('--failed', 'only the failed slices: grouped by error code and portfolio, or every one with --json')
    .addOption(new Option('--code <codes>', 'only failures with these error codes, comma-separated (implies --failed)').argParser(parseErrorCodesArgument))
    .option('--json', 'print JSON instead of tables')
    .addOption(configOption())
    .action(async (options) => {
      exitCode = await (await import('./status-command.js')).statusCommand(options, io);
    });

  program
    .command('dashboard')
    .description('serve a read-only web page of coverage (the ledger, day by day) and, when REDIS_URL is set, the queue, with Bull Board under /queues')
    .addOption(new Option('--port <port>', 'port to listen on (0: any free port)').argParser(parsePortArgument).default(8090))
    .addOption(new Option('--host <address>', 'address to listen on; anything but loopback requires dashboard.token (REPORT_SYNC_DASHBOARD__TOKEN)').default('127.0.0.1'))
    .addOption(configOption())
    .action(async (options) => {
      exitCode = await (await import('./dashboard-command.js')).dashboardCommand(options, io);
    });

  program
    .command('config')
    .description('print the effective settings with the layer each came from, and the environment variables read (secrets as set/unset); connects nowhere')
    .option('--json', 'print JSON instead of tables')
    .addOption(new Option('--concurrency <n>', 'show the settings as run, nightly and worker would have them with this --concurrency').argParser(parsePositiveIntArgument))
    .addOption(configOption())
    .action(async (options) => {
      exitCode = await (await import('./config-command.js')).configCommand(options, io);
    });

  program
    .command('check')
    .description('exit 0 when every slice of the expected days is loaded or no_data, 1 otherwise (for cron, Kubernetes jobs and monitoring)')
    .addOption(new Option('--date <date>', 'the last day expected, YYYY-MM-DD (default: yesterday in schedule.timeZone)').argParser(parseDateArgument))
    .addOption(new Option('--days <n>', 'days expected, ending with --date (default: 1)').argParser(parsePositiveIntArgument))
    .addOption(
      new Option('--grace <hours>', "hours after the night's cron time during which its missing slices count as pending (default: schedule.graceHours)").argParser(
        parseHoursArgument,
      ),
    )
    .addOption(portfoliosOption())
    .addOption(reportTypesOption())
    .option('--deep', "also compare every slice's ledger row count with the rows its table holds, and the monthly counts with the ledger")
    .option('--json', 'print JSON instead of text')
    .option('--no-alert', 'do not send the alert webhook, even when the check fails')
    .addOption(configOption())
    .action(async (options) => {
      exitCode = await (await import('./check-command.js')).checkCommand(options, io);
    });

  program
    .command('worker')
    .description('process export jobs from the Redis queue (BullMQ) until SIGTERM, sharing one token with the fleet')
    .addOption(concurrencyOption())
    .addOption(new Option('--metrics-port <port>', 'serve /metrics, /healthz and /readyz on this port (default: metrics.port)').argParser(parsePortArgument))
    .addOption(configOption())
    .action(async (options) => {
      exitCode = await (await import('./worker-command.js')).workerCommand(options, io);
    });

  program
    .command('backfill')
    .description('queue a date range for the workers, a window of jobs at a time (lower priority than nightly work)')
    .addOption(fromOption('yesterday'))
    .addOption(toOption())
    .addOption(portfoliosOption())
    .addOption(reportTypesOption())
    .option('--only-missing', 'skip slices the ledger has as loaded or no_data')
    .option('--failed', 'only the slices whose last outcome is failed (not with --only-missing, which takes them already)')
    .addOption(new Option('--code <codes>', 'only failed slices with these error codes, comma-separated (implies --failed)').argParser(parseErrorCodesArgument))
    .option('--dry-run', 'say what would be queued and about how long the workers would take; connect to no Redis, queue nothing')
    .option('--json', 'with --dry-run: print the plan as JSON')
    .addOption(
      new Option('--request-seconds <s>', 'with --dry-run: seconds one export request takes, for the estimate (default: an assumed figure, said in the output)').argParser(
        parseSecondsArgument,
      ),
    )
    .option('--force', 'load every file again, even one already loaded unchanged')
    .option('--wait', 'follow progress until every slice of the range is queued and has an outcome, then summarise (exit codes as run)')
    .addOption(configOption())
    .action(async (options) => {
      exitCode = await (await import('./backfill-command.js')).backfillCommand(options, io);
    });

  program
    .command('scheduler')
    .description('register the nightly schedule (cron and time zone from config) with the queue, idempotently')
    .addOption(configOption())
    .action(async (options) => {
      exitCode = await (await import('./scheduler-command.js')).schedulerCommand(options, io);
    });

  program
    .command('simulate')
    .description('serve the bundled gateway simulator (token and export endpoints) on loopback')
    .addOption(new Option('--port <port>', 'port to listen on (0: any free port)').argParser(parsePortArgument).default(8080))
    .addOption(new Option('--token-lifetime <seconds>', 'lifetime of issued tokens').argParser(parsePositiveIntArgument).default(300))
    .action(async (options) => {
      exitCode = await (await import('./simulate-command.js')).simulateCommand(options, io);
    });

  program
    .command('demo')
    .description('start the simulator, sync a week of two portfolios into ./data/demo.sqlite, and query it')
    .action(async () => {
      exitCode = await (await import('./demo-command.js')).demoCommand(io);
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version' ? 0 : 2;
    }
    return await reportError(error, io);
  }
}

async function reportError(error: unknown, io: CliIo): Promise<number> {
  // A net under the rule that messages never hold a credential: the ones set are censored here too.
  const secrets = secretValues(await environmentForCensor(io));
  if (error instanceof SyncError) {
    io.stderr.write(`report-sync: ${redactSecrets(error.message, secrets)}\n`);
    // A command stopped by its machine (a data or temp directory it cannot write) is set up
    // wrong, like a configuration: exit 2, so a supervisor does not simply restart it.
    return error.fatal || error.code === 'LOCAL_STORAGE' ? 2 : 1;
  }
  const err = error instanceof Error ? error : new Error(String(error));
  io.stderr.write(redactSecrets(`report-sync: unexpected error: ${err.message}\n${err.stack ?? ''}\n`, secrets));
  return 1;
}

/** The variables whose secrets the censor must know: `.env`'s too, unless it cannot be read (then the real ones). */
async function environmentForCensor(io: CliIo): Promise<Record<string, string | undefined>> {
  try {
    // Loaded here, not at start: the settings schema (zod) would be a third of `--help`'s time.
    const { readEnvironment } = await import('../config/load-config.js');
    return readEnvironment(io.env ?? process.env, io.cwd ?? process.cwd(), true);
  } catch {
    return { ...(io.env ?? process.env) };
  }
}

/** The process entry point: real streams, signals, exit code. */
export async function runCli(): Promise<void> {
  const controller = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) process.exit(130);
    process.stderr.write(`\n${signal}: finishing the slices in flight; press Ctrl-C again to quit at once\n`);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.exitCode = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, signal: controller.signal });
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
}
