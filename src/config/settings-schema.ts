import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';
import { isIsoDate } from '../dates/is-iso-date.js';
import { isTimeZone } from '../dates/report-date.js';
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
 *
 * The JSDoc comment above each key is its meaning in docs/configuration.md: `npm run docs:config`
 * writes the page's settings table from them, so write them for the operator, in Markdown, and
 * give every new key one (the generator refuses a key without). An `@defaultValue` tag is checked
 * against the default the schema gives.
 */
export const settingsSchema = z
  .object({
    /** Portfolio ids synced when a command is not given `--portfolios`. */
    portfolios: z.array(portfolioId).min(1).default([1001, 1002]),
    /** Report types synced when a command is not given `--report-types`. */
    reportTypes: z.array(z.enum(REPORT_TYPES)).min(1).default(['index', 'constituent.close']),
    /** The `format` asked of the export endpoint per report type; types not listed use `defaultFormat`. */
    formats: z.partialRecord(z.enum(REPORT_TYPES), z.enum(EXPORT_FORMATS)).default({ index: 'json' }),
    /** The format of report types not in `formats`. */
    defaultFormat: z.enum(EXPORT_FORMATS).default('csv'),
    dates: z
      .object({
        /**
         * The oldest report date a command or the dashboard takes: an older `--from`, `check --date`
         * or dashboard `from` (a year typed wrong, `0224-01-08`, which would otherwise plan and show
         * centuries of slices) is refused, as is a date after tomorrow in `schedule.timeZone`.
         * @defaultValue "2000-01-01"
         */
        earliest: z.string().refine(isIsoDate, 'not a date in YYYY-MM-DD form, e.g. "2000-01-01"').default('2000-01-01'),
      })
      .strict()
      .prefault({}),
    schedule: z
      .object({
        /**
         * When the nightly sync runs (the queue scheduler's cron pattern, checked with cron-parser,
         * the parser BullMQ's scheduler uses); a day's night is due at its first firing at or after
         * the midnight that ends the day (`check`).
         */
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
        /** Days before yesterday whose missing, no-data and failed slices `nightly` checks again. */
        lookbackDays: nonNegativeInt.max(366).default(7),
        /**
         * How often each worker makes sure the nightly schedule still exists in Redis (a Redis
         * restarted without persistence loses it), re-creating it from its own settings if not.
         */
        checkIntervalMs: positiveInt.min(1_000).max(86_400_000).default(300_000),
        /**
         * Hours after a night is due during which `check` reports its missing slices as pending, not
         * failed (the night may still be running).
         */
        graceHours: z.number().min(0).max(168).default(6),
      })
      .strict()
      .prefault({}),
    startup: z
      .object({
        /**
         * How long a one-shot command waits for Redis and the warehouse at start before it stops
         * with exit 2 (`SERVICE_UNREACHABLE`) naming the one that did not answer; also the Postgres
         * connection timeout. A worker keeps waiting for Redis instead, not ready.
         */
        timeoutMs: positiveInt.max(600_000).default(10_000),
      })
      .strict()
      .prefault({}),
    /**
     * Downloads at once in one process: the export requests it has in flight. A `worker` takes
     * `queue.prefetch` jobs more (as many again by default), so that a slice waiting for the
     * warehouse, or being written, leaves its download slot to the next one; those slices keep their
     * downloaded file meanwhile (in memory up to `limits.spoolMemoryBytes`, on disk above it). `run`
     * and `nightly` hold as many slices as downloads.
     */
    concurrency: positiveInt.max(1024).default(8),
    retry: z
      .object({
        /** Attempts per slice, the first included, before a retryable failure becomes final. */
        attempts: positiveInt.max(100).default(5),
        /**
         * First backoff between attempts; each further attempt doubles it, with equal jitter (half
         * of each step fixed, half random).
         */
        baseDelayMs: nonNegativeInt.default(1_000),
        /** Longest backoff between two attempts; the doubling stops there. */
        maxDelayMs: nonNegativeInt.default(60_000),
        /** Longest `Retry-After` honoured as given; longer ones are cut to this. */
        maxRetryAfterMs: nonNegativeInt.default(300_000),
      })
      .strict()
      .prefault({}),
    http: z
      .object({
        /** Time allowed to open a connection to the gateway or the identity provider. */
        connectTimeoutMs: positiveInt.default(10_000),
        /** Time allowed for the service to generate the report and start answering. */
        headersTimeoutMs: positiveInt.default(120_000),
        /**
         * Longest silence allowed between two chunks of a body, and the window in which at least
         * 16 KiB of it must arrive.
         */
        bodyTimeoutMs: positiveInt.default(60_000),
        /** How long an idle connection of the keep-alive pool is kept open. */
        keepAliveTimeoutMs: positiveInt.default(30_000),
        /** Keep-alive connections per origin; they cap the requests in flight as well. */
        connections: positiveInt.max(1024).default(64),
        /** Verify TLS certificates; `false` is for test rigs only and logs a warning at every start. */
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
         * Renew a token this long before the lifetime the server gave (`expires_in`, counted from
         * the request) runs out; at most a tenth of it, and less under 10 s (a 2 s token is renewed
         * 40 ms early).
         */
        refreshMarginSeconds: nonNegativeInt.default(30),
        /**
         * How long jobs wait for an identity provider that is down (5xx, 429, refused or broken
         * connections) before their slices fail with `AUTH_UNAVAILABLE`; meanwhile one waiter per
         * process (per fleet in queue mode) asks again with backoff (1 s doubling to 30 s, jitter,
         * `Retry-After` honoured) and no slice spends an attempt; `0` fails at once.
         */
        unavailableWaitMs: nonNegativeInt.max(86_400_000).default(300_000),
        /**
         * Queue mode: after the identity provider refused the credentials, workers stop taking jobs
         * and the fleet asks again with them once per this interval (10 min by default; an identity
         * provider's brute-force protection locks accounts that keep trying), until they are accepted.
         */
        rejectedRetryMs: positiveInt.min(1_000).max(86_400_000).default(600_000),
        /**
         * Longest one token request may take, connecting, answering and sending its whole body (an
         * endpoint trickling a byte a second satisfies every `http.*` timeout); past it the request
         * counts as the provider unavailable (`AUTH_UNAVAILABLE`), waited through like any outage,
         * so a run waits for a token at most about `token.unavailableWaitMs` + this.
         * @defaultValue 30000
         */
        requestTimeoutMs: positiveInt.min(100).max(600_000).default(30_000),
        /**
         * Longest `expires_in` believed: a longer one (a year, `1e300`) is cut to this, with one
         * warning line; a token that dies sooner is renewed on the export endpoint's 401. Every
         * shorter lifetime is believed as stated, however short (under 1 s, as `0.001`, counts as
         * 1 s, with one warning); a numeric string (`"300"`) counts as its number, a missing or
         * non-numeric one (`"abc"`) as the spec's 300 s. @defaultValue 86400
         */
        maxLifetimeSeconds: positiveInt.max(31_536_000).default(86_400),
        /**
         * Removed, and ignored with a warning at every start saying to delete it: every lifetime
         * the identity provider states is believed, down to 1 s.
         */
        minLifetimeSeconds: retiredSetting,
        /**
         * Removed, and ignored with a warning at every start saying to delete it: a 401 is judged
         * per token (see [how a slice is fetched](operations.md#how-a-slice-is-fetched)).
         */
        minRenewalIntervalMs: retiredSetting,
      })
      .strict()
      .prefault({}),
    limits: z
      .object({
        /** Largest export body downloaded; a larger one fails the slice. */
        maxDownloadBytes: positiveInt.default(2 * 1024 ** 3),
        /** Largest CSV a ZIP may inflate to (zip-bomb guard). */
        maxUncompressedBytes: positiveInt.default(8 * 1024 ** 3),
        /** Bodies up to this size stay in memory; larger ones spool to a temporary file. */
        spoolMemoryBytes: nonNegativeInt.default(4 * 1024 ** 2),
        /**
         * A ZIP body at least this big is inflated, parsed and typed on a worker thread while the
         * slice's transaction writes its rows (see [Performance](performance.md)); a smaller one
         * stays on the one thread, where a worker's start would cost more than it saves. 8 MiB of
         * ZIP is about 250,000 rows of a constituent report. `0` threads every ZIP.
         * @defaultValue 8388608
         */
        threadedParseBytes: nonNegativeInt.default(8 * 1024 ** 2),
        /** Deepest nesting accepted inside a JSON record. */
        maxJsonDepth: positiveInt.max(1_000).default(64),
        /**
         * Longest record (a CSV line, quoted line breaks included; a JSON array element), and so
         * longest cell, in characters: a longer one fails the slice (`FILE_INVALID`, naming the line
         * or record) before it is held whole, on either thread, so one hostile line cannot take a
         * process's memory. @defaultValue 1048576 (1 MiB)
         */
        maxRecordBytes: positiveInt.min(1_024).default(1024 ** 2),
      })
      .strict()
      .prefault({}),
    warehouse: z
      .object({
        /**
         * Rows per INSERT (SQLite, and MySQL without local files; the statement is compiled once
         * and reused), rows per chunk of COPY data (Postgres) or of LOAD DATA's file (MySQL).
         */
        batchRows: positiveInt.max(2_000).default(500),
        /**
         * Most slices one transaction commits together. Slices whose files are ready at the same
         * moment share a transaction, each in a savepoint of its own: a slice that fails (a bad
         * record, a failed check) rolls back alone, and no slice counts as done before its commit.
         * A lone slice commits at once. `1` gives each slice a transaction of its own.
         */
        slicesPerCommit: positiveInt.max(1_000).default(50),
        /** SQLite: how long a writer waits for a lock held by another process. */
        busyTimeoutMs: nonNegativeInt.default(10_000),
        /**
         * Postgres: the most connections one process keeps open to the warehouse. A process writes
         * in at most two transactions at a time; the rest serve reads (the dashboard, `status`).
         * Behind PgBouncer in session pooling, size its pool for every process's `poolSize`.
         */
        poolSize: positiveInt.max(1_000).default(10),
        /**
         * `true` believes an empty answer (`no_data`) for a slice the warehouse holds rows of,
         * deleting them; `false` keeps the rows and fails the slice with `EMPTY_RESTATEMENT`, so a
         * glitch upstream never wipes loaded data on its own.
         */
        acceptEmptyRestatements: z.boolean().default(false),
        /**
         * SQLite: the permissions (octal, as chmod takes them) a new warehouse file is created with;
         * its WAL files follow it, and a directory report-sync creates for it gets the matching
         * search bits (`"600"` → `700`, `"640"` → `750`). Existing files are left as they are. Owner
         * only by default: the warehouse holds the same data the spooled bodies do, which are
         * private too. A data directory that cannot be created or written stops the command with
         * `LOCAL_STORAGE` (exit 2) naming the path.
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
        /** Redis key prefix of every key report-sync keeps; the braces make it a Redis Cluster hash tag, so all of them share a slot (required on a cluster: a prefix without one is refused there). */
        prefix: z.string().min(1).default('{report-sync}'),
        /** Priority of nightly slices (lower runs first): nightly slices run before backfill slices. */
        nightlyPriority: positiveInt.max(2_097_152).default(1),
        /** Priority of backfill slices. */
        backfillPriority: positiveInt.max(2_097_152).default(10),
        /**
         * Finished jobs are kept in Redis at most this old and at most `count` of them (a
         * million-slice backfill must not fill Redis).
         */
        keepCompleted: z
          .object({
            /** Seconds a completed job is kept in Redis. */
            ageSeconds: nonNegativeInt.default(3_600),
            /** Most completed jobs kept in Redis. */
            count: nonNegativeInt.default(10_000),
          })
          .strict()
          .prefault({}),
        keepFailed: z
          .object({
            /** Seconds a failed job is kept in Redis. */
            ageSeconds: nonNegativeInt.default(7 * 86_400),
            /** Most failed jobs kept in Redis. */
            count: nonNegativeInt.default(50_000),
          })
          .strict()
          .prefault({}),
        rateLimit: z
          .object({
            /**
             * Export requests per `durationMs` across every worker (a sliding window in Redis, plus
             * BullMQ's limiter on job starts); `0` turns the limit off.
             */
            max: nonNegativeInt.default(0),
            /** The window of `queue.rateLimit.max`. */
            durationMs: positiveInt.default(1_000),
          })
          .strict()
          .prefault({}),
        /**
         * How long a worker may hold a job without renewing its lock before another worker takes
         * it: with `stalledIntervalMs`, how soon a crashed worker's job goes to another worker.
         */
        lockDurationMs: positiveInt.default(60_000),
        /** How often workers look for jobs whose lock has expired (stalled jobs). */
        stalledIntervalMs: positiveInt.default(30_000),
        /**
         * Times a job may stall (the worker holding it died, was killed or stopped renewing its
         * lock) and still go to another worker; the next stall fails its slice for good as
         * `WORKER_DIED`, unattempted, so a file that kills whoever reads it stops at this many dead
         * workers plus one (see [queue mode](operations.md#many-machines-queue-mode)). More than 0
         * by default: a deploy's SIGKILL stalls the jobs in flight, and a job taken over after one
         * can meet the next restart, or a Redis restart that outlived the locks. @defaultValue 2
         */
        maxStalledCount: nonNegativeInt.max(100).default(2),
        /**
         * Jobs a worker takes beyond its `concurrency` downloads: they wait for a download slot while
         * the slices before them are written. `null`: as many as `concurrency`. A worker that dies
         * stalls every job it holds, so `0` keeps a crash (a file that kills its reader) from taking
         * waiting jobs down with it, at the cost of download slots idle while slices are written.
         * @defaultValue null
         */
        prefetch: nonNegativeInt.max(1024).nullable().default(null),
        /** Jobs added per round trip while queueing a backfill. */
        addBatchSize: positiveInt.max(10_000).default(1_000),
        /**
         * Most jobs the queue holds while a backfill is being queued: a backfill is kept in Redis as
         * a plan (range, selection, cursor) and the workers queue its next slices as they finish
         * them, so Redis memory stays the same however long the range (see
         * [backfills](operations.md#backfills-of-any-size)).
         */
        backfillWindow: positiveInt.max(1_000_000).default(10_000),
      })
      .strict()
      .prefault({}),
    metrics: z
      .object({
        /**
         * Port where `worker` (and `run`/`nightly` given `--metrics-port`) serves `/metrics`,
         * `/healthz` and `/readyz`; `null`: no server, `0`: any free port (logged, and shown by
         * `/healthz`). Several workers on one host need a port each, or `0`.
         */
        port: z.number().int().min(0).max(65_535).nullable().default(9464),
        /** Interface they listen on: `127.0.0.1` on a shared host, `0.0.0.0` in a container Prometheus scrapes. */
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
        weightsSum: z
          .object({
            /**
             * `warn`, `fail` or `off`: the weights (`index_weighting`) of a constituent file sum to 1,
             * or to 100 (the nearer is taken as the scale), within `tolerance`. A portfolio holding
             * cash, a partial list or weights in another basis sums to something else.
             */
            severity: checkSeverity.default('warn'),
            /** The share of the scale the weights' sum may miss it by (0.001 is 0.1 % of the total). */
            tolerance: z.number().min(0).max(1).default(0.001),
          })
          .strict()
          .prefault({}),
        duplicateIsin: z
          .object({
            /** `warn`, `fail` or `off`: no ISIN twice in one constituent file (a duplicate double-counts a security). */
            severity: checkSeverity.default('warn'),
          })
          .strict()
          .prefault({}),
        rowCountDrop: z
          .object({
            /**
             * `warn`, `fail` or `off`: the file has at most `maxDropShare` fewer rows than the
             * previous loaded date of the same portfolio and report type; a portfolio may really shrink.
             */
            severity: checkSeverity.default('warn'),
            /** The largest share of rows the file may have fewer (a quarter fewer is 0.25, a halved day 0.5). */
            maxDropShare: z.number().min(0).max(1).default(0.25),
          })
          .strict()
          .prefault({}),
        effectiveDate: z
          .object({
            /**
             * `warn`, `fail` or `off`: every row's `effective_date` is the report date or at most
             * `maxBusinessDaysBefore` business days before it, never after (a stale file loaded
             * under a new date passes old data off as current).
             */
            severity: checkSeverity.default('warn'),
            /** Business days (Monday–Friday, no holiday calendar) a row's `effective_date` may be before the report date. */
            maxBusinessDaysBefore: nonNegativeInt.max(366).default(5),
          })
          .strict()
          .prefault({}),
        positiveValues: z
          .object({
            /**
             * `warn`, `fail` or `off`: prices, FX rates and shares (constituent files), index values,
             * market values and divisors (index files) are above zero where given.
             */
            severity: checkSeverity.default('warn'),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    dashboard: z
      .object({
        /**
         * A secret of at least 16 characters (`openssl rand -hex 32`) the
         * [dashboard](operations.md#the-coverage-dashboard) asks for on every route (page, assets,
         * API, Bull Board): `Authorization: Bearer <token>`, or a browser's login with any user name
         * and the token as password (HTTP Basic). Unset (`null`): no login, and the dashboard binds
         * to loopback only; required to listen beyond loopback. Censored like a credential:
         * `report-sync config` shows it as `set` or `unset`, logs and errors never show it. Set it
         * in the environment or `.env`, like the other secrets. @defaultValue null
         */
        token: z.string().min(16, 'too short for a secret: use at least 16 characters, e.g. from openssl rand -hex 32').nullable().default(null),
      })
      .strict()
      .prefault({}),
    log: z
      .object({
        /** `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`; `LOG_LEVEL` overrides it. */
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
