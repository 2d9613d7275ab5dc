import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';
import { isIsoDate } from '../is-iso-date.js';
import { isTimeZone } from '../report-date.js';
import { EXPORT_FORMATS, REPORT_TYPES } from '../reports/report-types.js';

const positiveInt = z.number().int().min(1);
const nonNegativeInt = z.number().int().min(0);
const portfolioId = z.number().int().min(1).max(2_147_483_647);
/**
 * A setting that no longer exists, kept so that a deployment still setting it starts (with a
 * warning naming it, see `retiredSettingsIn`) instead of failing at its next upgrade, and so that
 * an unknown-key "did you mean" never points it at another setting.
 */
const retiredSetting = z.unknown().optional();
/** What a data-quality check does when a file does not pass it. */
const checkSeverity = z.enum(['fail', 'warn', 'off']);

/** Why a cron pattern is refused, in the words of the parser BullMQ's job scheduler uses; undefined when it is fine. */
function cronProblem(pattern: string): string | undefined {
  try {
    CronExpressionParser.parse(pattern, { tz: 'UTC' });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * The non-secret settings, as they may appear in `config/*.json`. Every key has a default, so an
 * empty file is valid; unknown keys are rejected so a typo never passes silently.
 */
export const settingsSchema = z
  .object({
    /** Portfolio ids synced when a command is not given `--portfolios`. */
    portfolios: z.array(portfolioId).min(1).default([1001, 1002]),
    /** Report types synced when a command is not given `--report-types`. */
    reportTypes: z.array(z.enum(REPORT_TYPES)).min(1).default(['index', 'constituent.close']),
    /** The `format` asked of the export endpoint per report type; missing types use `defaultFormat`. */
    formats: z.partialRecord(z.enum(REPORT_TYPES), z.enum(EXPORT_FORMATS)).default({ index: 'json' }),
    defaultFormat: z.enum(EXPORT_FORMATS).default('csv'),
    dates: z
      .object({
        /**
         * The oldest report date a command takes (`--from`, `--date`, the dashboard's range): an
         * older one is refused as a likely typo of the year (`0224` for `2024`), which would
         * otherwise plan and show centuries of slices. @defaultValue "2000-01-01"
         */
        earliest: z.string().refine(isIsoDate, 'not a date in YYYY-MM-DD form, e.g. "2000-01-01"').default('2000-01-01'),
      })
      .strict()
      .prefault({}),
    schedule: z
      .object({
        /** Cron pattern of the nightly sync (used by the queue scheduler). */
        cron: z
          .string()
          .min(1)
          .superRefine((pattern, context) => {
            const problem = cronProblem(pattern);
            if (problem) context.addIssue({ code: 'custom', message: `not a cron pattern (${problem}); e.g. "30 2 * * *" is 02:30 every day` });
          })
          .default('30 2 * * *'),
        /** IANA time zone that decides what "yesterday" is. */
        timeZone: z.string().refine(isTimeZone, 'not an IANA time zone such as "Europe/London"').default('UTC'),
        /** Days before yesterday whose missing, no-data and failed slices the nightly sync checks again. */
        lookbackDays: nonNegativeInt.max(366).default(7),
        /**
         * How often each worker makes sure the nightly schedule still exists in Redis (a Redis
         * restarted without persistence loses it), re-creating it from its own settings if not.
         */
        checkIntervalMs: positiveInt.min(1_000).max(86_400_000).default(300_000),
        /**
         * How long after its cron time a night may still be running: `check` reports the night's
         * missing slices as pending, not failed, until then.
         */
        graceHours: z.number().min(0).max(168).default(6),
      })
      .strict()
      .prefault({}),
    startup: z
      .object({
        /**
         * How long a command waits at start for Redis and the warehouse to answer before it stops
         * with exit 2 naming the one that did not (a worker keeps retrying instead, not ready).
         */
        timeoutMs: positiveInt.max(600_000).default(10_000),
      })
      .strict()
      .prefault({}),
    /** Slices processed at once by one process. */
    concurrency: positiveInt.max(1024).default(8),
    retry: z
      .object({
        /** Attempts per slice, the first included, before a retryable failure becomes final. */
        attempts: positiveInt.max(100).default(5),
        /** First backoff; each further attempt doubles it, with equal jitter (see RetryPolicy). */
        baseDelayMs: nonNegativeInt.default(1_000),
        maxDelayMs: nonNegativeInt.default(60_000),
        /** Longest Retry-After honoured as given; longer ones are cut to this. */
        maxRetryAfterMs: nonNegativeInt.default(300_000),
      })
      .strict()
      .prefault({}),
    http: z
      .object({
        connectTimeoutMs: positiveInt.default(10_000),
        /** Time allowed for the service to generate the report and start answering. */
        headersTimeoutMs: positiveInt.default(120_000),
        /** Longest silence allowed between two chunks of a body. */
        bodyTimeoutMs: positiveInt.default(60_000),
        keepAliveTimeoutMs: positiveInt.default(30_000),
        /** Keep-alive connections per origin. */
        connections: positiveInt.max(1024).default(64),
        /** Verify TLS certificates. Turning this off is for test rigs only and logs a warning. */
        verifyTls: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
    /**
     * A token is used for the lifetime its identity provider stated (`expires_in`), counted from
     * when it was asked for, and renewed before that runs out; one token per lifetime for the
     * process (the fleet in queue mode). A 401 from the export endpoint to a token whose lifetime
     * has passed, or that was already replaced, renews it and retries; so does the first 401 to a
     * token within its lifetime (revoked). Only a token asked for because of such a 401 and refused
     * as well, within the first half of its lifetime (30 s at most), is a configuration problem:
     * EXPORT_UNAUTHORIZED naming the tenant id, client and permissions, and no more tokens for it.
     */
    token: z
      .object({
        /**
         * Renew a token this long before its stated lifetime runs out; at most a tenth of that
         * lifetime, and less under 10 s (a 2 s token is renewed 40 ms early).
         */
        refreshMarginSeconds: nonNegativeInt.default(30),
        /**
         * How long jobs wait for an identity provider that is down (5xx, refused connections) before
         * their slices fail with AUTH_UNAVAILABLE; meanwhile it is asked with backoff, once for the
         * whole process (or fleet), and no slice spends an attempt. 0 fails at once.
         */
        unavailableWaitMs: nonNegativeInt.max(86_400_000).default(300_000),
        /**
         * Queue mode: after the identity provider refuses the credentials, workers stop taking jobs
         * and the fleet asks again with them once per this interval (an identity provider's
         * brute-force protection locks accounts that keep trying), until they are accepted.
         */
        rejectedRetryMs: positiveInt.min(1_000).max(86_400_000).default(600_000),
        /**
         * Longest a token request may take, connecting, waiting for the answer and reading it all: a
         * token endpoint that trickles its answer (or never finishes it) counts as unavailable
         * (AUTH_UNAVAILABLE, waited through like any outage, see unavailableWaitMs) instead of holding
         * every job up. @defaultValue 30000
         */
        requestTimeoutMs: positiveInt.min(100).max(600_000).default(30_000),
        /**
         * Longest token lifetime believed: a larger `expires_in` (a year, 1e300) is cut to this, with
         * a warning; a token that dies sooner is renewed on the export endpoint's 401. Every shorter
         * lifetime is believed as stated, however short (one under 1 s is used as 1 s). @defaultValue 86400
         */
        maxLifetimeSeconds: positiveInt.max(31_536_000).default(86_400),
        /** Removed: every lifetime is believed as stated, down to 1 s. */
        minLifetimeSeconds: retiredSetting,
        /** Removed: a 401 is judged per token (see `token`). */
        minRenewalIntervalMs: retiredSetting,
      })
      .strict()
      .prefault({}),
    limits: z
      .object({
        /** Largest export body downloaded; more fails the slice. */
        maxDownloadBytes: positiveInt.default(2 * 1024 ** 3),
        /** Largest CSV a ZIP may inflate to (zip-bomb guard). */
        maxUncompressedBytes: positiveInt.default(8 * 1024 ** 3),
        /** Bodies up to this size stay in memory; larger ones spool to a temporary file. */
        spoolMemoryBytes: nonNegativeInt.default(4 * 1024 ** 2),
        /**
         * A ZIP body of at least this many bytes is inflated, parsed and typed on a worker thread
         * while the slice's transaction writes its rows; a smaller one stays on the one thread,
         * where a worker's start (about 30 ms and 10 MB) would cost more than it saves. 8 MiB of
         * ZIP is about 250,000 rows of a constituent report. @defaultValue 8388608
         */
        threadedParseBytes: nonNegativeInt.default(8 * 1024 ** 2),
        /** Deepest nesting accepted inside a JSON record. */
        maxJsonDepth: positiveInt.max(1_000).default(64),
        /**
         * Longest record (a CSV line with its quoted line breaks, a JSON array element) and so
         * longest cell, in characters: a longer one fails the slice (FILE_INVALID) before it is held
         * whole, so one hostile line cannot take a process's memory. @defaultValue 1048576 (1 MiB)
         */
        maxRecordBytes: positiveInt.min(1_024).default(1024 ** 2),
      })
      .strict()
      .prefault({}),
    warehouse: z
      .object({
        /** Rows per INSERT statement while loading a slice. */
        batchRows: positiveInt.max(2_000).default(500),
        /**
         * Most slices committed in one transaction, each in a savepoint of its own (one bad slice
         * rolls back alone); slices that become ready together share a commit. 1: a transaction each.
         */
        slicesPerCommit: positiveInt.max(1_000).default(50),
        /** SQLite: how long a writer waits for a lock held by another process. */
        busyTimeoutMs: nonNegativeInt.default(10_000),
        /**
         * Accept an empty answer (no data) for a slice the warehouse holds rows of, deleting them.
         * Off: the rows are kept and the slice is `failed` with EMPTY_RESTATEMENT, so a glitch
         * upstream never wipes loaded data on its own.
         */
        acceptEmptyRestatements: z.boolean().default(false),
        /**
         * SQLite: the permissions (octal, as chmod takes them) a new warehouse file is created with;
         * its journal files follow it, and a directory report-sync creates for it gets the matching
         * search bits. Owner only by default: the warehouse holds the same data the spooled bodies
         * do, which are private too.
         */
        sqliteFileMode: z
          .string()
          .regex(/^0?[0-7]{3}$/, 'an octal mode such as "600" or "640"')
          .default('600'),
      })
      .strict()
      .prefault({}),
    queue: z
      .object({
        /** BullMQ queue name. */
        name: z
          .string()
          .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-" only')
          .default('report-exports'),
        /** Redis key prefix; the braces make it a Redis Cluster hash tag, so all keys of the queue share a slot. */
        prefix: z.string().min(1).default('{report-sync}'),
        /** Priority of nightly slices (lower runs first). */
        nightlyPriority: positiveInt.max(2_097_152).default(1),
        /** Priority of backfill slices. */
        backfillPriority: positiveInt.max(2_097_152).default(10),
        /** Finished jobs kept in Redis: at most this old and this many (a million-slice backfill must not fill Redis). */
        keepCompleted: z
          .object({ ageSeconds: nonNegativeInt.default(3_600), count: nonNegativeInt.default(10_000) })
          .strict()
          .prefault({}),
        keepFailed: z
          .object({ ageSeconds: nonNegativeInt.default(7 * 86_400), count: nonNegativeInt.default(50_000) })
          .strict()
          .prefault({}),
        /** Export requests per interval across every worker (a sliding window in Redis, plus BullMQ's limiter on job starts); 0 turns the limit off. */
        rateLimit: z
          .object({ max: nonNegativeInt.default(0), durationMs: positiveInt.default(1_000) })
          .strict()
          .prefault({}),
        /** How long a worker may hold a job without renewing its lock before another worker takes it. */
        lockDurationMs: positiveInt.default(60_000),
        stalledIntervalMs: positiveInt.default(30_000),
        /**
         * Times a job may stall (its worker died, was killed, or stopped renewing its lock) and
         * still go to another worker; the next stall fails its slice for good as `WORKER_DIED`.
         * More than 0 by default: a deploy's SIGKILL stalls the jobs in flight, and a job taken over
         * after one can meet the next restart, or a Redis restart that outlived the locks.
         * @defaultValue 2
         */
        maxStalledCount: nonNegativeInt.max(100).default(2),
        /** Jobs added per round trip while queueing a backfill. */
        addBatchSize: positiveInt.max(10_000).default(1_000),
      })
      .strict()
      .prefault({}),
    metrics: z
      .object({
        /**
         * Port of `/metrics`, `/healthz` and `/readyz` for `worker` (and for `run`/`nightly` given
         * `--metrics-port`); null: no server. 0 picks any free port.
         */
        port: z.number().int().min(0).max(65_535).nullable().default(9464),
        /** Interface they listen on: 127.0.0.1 on a shared host, 0.0.0.0 in a container Prometheus scrapes. */
        host: z.string().min(1).default('127.0.0.1'),
      })
      .strict()
      .prefault({}),
    /**
     * Data-quality checks run on every file loaded, while its rows stream into the slice's
     * transaction. `warn` (every check's default) loads the file and records, shows and alerts the
     * warning; `fail` refuses the file (the slice keeps its earlier rows and is `failed` with
     * QUALITY_CHECK_FAILED), for teams who want a bad file kept out; `off` skips the check. Each
     * check is a heuristic about files the spec says little of (it does not say weights sum to 1),
     * so none refuses what the service served unless asked to. What each check looks at is the
     * report definition's (see `ReportDefinition.checks`).
     */
    checks: z
      .object({
        /**
         * The weights of a constituent file sum to 1 (or to 100, detected) within `tolerance`
         * (of the scale: 0.001 is 0.1 % of the total). A portfolio holding cash, a partial list or
         * weights in another basis sums to something else. @defaultValue warn
         */
        weightsSum: z
          .object({ severity: checkSeverity.default('warn'), tolerance: z.number().min(0).max(1).default(0.001) })
          .strict()
          .prefault({}),
        /** No ISIN twice in one constituent file (a duplicate double-counts a security). @defaultValue warn */
        duplicateIsin: z
          .object({ severity: checkSeverity.default('warn') })
          .strict()
          .prefault({}),
        /**
         * The file has at most `maxDropShare` fewer rows than the previous loaded date of the same
         * portfolio and report type (0.25: a quarter fewer); a portfolio may really shrink.
         * @defaultValue warn
         */
        rowCountDrop: z
          .object({ severity: checkSeverity.default('warn'), maxDropShare: z.number().min(0).max(1).default(0.25) })
          .strict()
          .prefault({}),
        /**
         * Every row's effective date is the report date or at most `maxBusinessDaysBefore` business
         * days (Monday to Friday, no holiday calendar) before it, never after (a stale file loaded
         * under a new date passes old data off as current). @defaultValue warn
         */
        effectiveDate: z
          .object({ severity: checkSeverity.default('warn'), maxBusinessDaysBefore: nonNegativeInt.max(366).default(5) })
          .strict()
          .prefault({}),
        /**
         * Prices, FX rates, shares (constituent files) and index values, market values and divisors
         * (index files) are above zero where given. @defaultValue warn
         */
        positiveValues: z
          .object({ severity: checkSeverity.default('warn') })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    dashboard: z
      .object({
        /**
         * A secret the dashboard asks every request for, on every route (page, assets, API, Bull
         * Board): `Authorization: Bearer <token>`, or HTTP Basic with any user name and the token as
         * password (what a browser's login prompt sends). Unset (null): no login, and the dashboard
         * binds to loopback only. Set it in the environment or `.env`
         * (`REPORT_SYNC_DASHBOARD__TOKEN`), like the other secrets; `report-sync config` shows it as
         * set or unset. @defaultValue null
         */
        token: z.string().min(16, 'too short for a secret: use at least 16 characters, e.g. from openssl rand -hex 32').nullable().default(null),
      })
      .strict()
      .prefault({}),
    log: z
      .object({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      })
      .strict()
      .prefault({}),
  })
  .strict();

/** Validated settings; see {@link settingsSchema} for what each key means and its default. */
export type Settings = z.output<typeof settingsSchema>;

/** Settings as written in a file: every key optional. */
export type SettingsInput = z.input<typeof settingsSchema>;
