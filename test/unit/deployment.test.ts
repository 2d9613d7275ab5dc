import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = new URL('../../', import.meta.url);
const compose = parse(readFileSync(new URL('docker-compose.yml', root), 'utf8'), { merge: true }) as {
  services: Record<
    string,
    {
      command?: string[];
      healthcheck?: { test?: string[] };
      env_file?: string;
      depends_on?: Record<string, { condition: string; required?: boolean }>;
      profiles?: string[];
      deploy?: { replicas?: number };
      environment?: Record<string, string>;
      image?: string;
      build?: string;
      entrypoint?: string[];
    }
  >;
};
const dockerfile = readFileSync(new URL('Dockerfile', root), 'utf8');

// No Docker engine runs on these machines, so the files are checked by reading them.
describe('docker-compose.yml', () => {
  it('has the production shape: redis, postgres, a one-shot migrate, scheduler and two workers', () => {
    const { services } = compose;
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['redis', 'postgres', 'migrate', 'scheduler', 'worker']));
    expect(services.migrate!.command).toEqual(['migrate']);
    expect(services.scheduler!.command).toEqual(['scheduler']);
    expect(services.worker!.command).toEqual(['worker']);
    expect(services.worker!.deploy?.replicas).toBe(2);
    expect(services.worker!.depends_on?.migrate?.condition).toBe('service_completed_successfully');
  });

  it('checks each worker on /readyz, and lets Prometheus reach its metrics', () => {
    const worker = compose.services.worker!;
    expect(worker.healthcheck?.test?.join(' ')).toContain('http://127.0.0.1:9464/readyz');
    expect(worker.environment?.REPORT_SYNC_CONFIG).toBe('config/compose.json');
    const settings = JSON.parse(readFileSync(new URL('config/compose.json', root), 'utf8')) as { metrics?: { host?: string } };
    expect(settings.metrics?.host).toBe('0.0.0.0');
  });

  it('gives every report-sync service the same .env, a Postgres warehouse and Redis', () => {
    for (const name of ['migrate', 'scheduler', 'worker']) {
      const service = compose.services[name]!;
      expect(service.env_file).toBe('.env');
      // Postgres unless WAREHOUSE_URL names another warehouse (the mariadb profile's).
      expect(service.environment?.DATABASE_URL).toMatch(/^\$\{WAREHOUSE_URL:-postgres:\/\/.+@postgres:5432\/report_sync\}$/);
      expect(service.environment?.REDIS_URL).toBe('redis://redis:6379');
    }
  });
});

describe('the optional MariaDB warehouse', () => {
  it('runs only under the mariadb profile, in utf8mb4, its password from .env, and migrate waits for it when it runs', () => {
    const mariadb = compose.services.mariadb!;
    expect(mariadb.profiles).toEqual(['mariadb']);
    expect(mariadb.command).toEqual(expect.arrayContaining(['--character-set-server=utf8mb4', '--collation-server=utf8mb4_bin']));
    expect(mariadb.environment?.MARIADB_PASSWORD).toBe('${MARIADB_PASSWORD:?set MARIADB_PASSWORD in .env (letters and digits)}');
    expect(mariadb.environment?.MARIADB_DATABASE).toBe('report_sync');
    expect(mariadb.healthcheck?.test).toContain('healthcheck.sh');
    expect(compose.services.migrate!.depends_on?.mariadb).toEqual({ condition: 'service_healthy', required: false });
    expect(compose.services.postgres!.profiles).toBeUndefined();
    expect(readFileSync(new URL('config/.env.example', root), 'utf8')).toMatch(/^# MARIADB_PASSWORD=$/m);
  });
});

describe('Dockerfile', () => {
  it('is multi-stage on the active Node LTS slim image (26 since October 2026), non-root, running the compiled command', () => {
    const stages = dockerfile.match(/^FROM .+$/gm) ?? [];
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage).toMatch(/^FROM node:26-slim/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/ENTRYPOINT \["node", "dist\/src\/cli\/bin\.js"\]/);
    expect(compose.services.backfill?.entrypoint).toEqual(['node', 'dist/src/cli/bin.js', 'backfill']);
  });

  it('builds dist/ in the build stage, and the runtime stage gets production dependencies only, without build leftovers', () => {
    const [build = '', runtime = ''] = dockerfile.split(/^FROM .+$/m).slice(1);
    expect(build).toMatch(/npm run build/);
    expect(build).toMatch(/npm prune --omit=dev/);
    // better-sqlite3's intermediate objects, static library, test extension and SQLite sources go.
    expect(build).toMatch(/find build .*-not -path 'build\/Release\/better_sqlite3\.node' -delete/);
    expect(build).toMatch(/rm -rf deps src/);
    expect(runtime).not.toMatch(/apt-get|npm (ci|install)|tsx|COPY (src|jobs|test)\b/);
    expect(runtime).toMatch(/COPY --from=build \/app\/dist\/src/);
    expect(runtime).toMatch(/COPY --from=build \/app\/node_modules/);
  });
});

describe('.dockerignore', () => {
  // Docker's rule: the last pattern matching a path, or a folder above it, decides; "!" re-includes.
  const patterns = readFileSync(new URL('.dockerignore', root), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const glob = (pattern: string) => new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replaceAll('*', '[^/]*')}$`);
  const ignored = (path: string): boolean => {
    const prefixes = path.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'));
    let out = false;
    for (const pattern of patterns) {
      const negated = pattern.startsWith('!');
      const matcher = glob(negated ? pattern.slice(1) : pattern);
      if (prefixes.some((prefix) => matcher.test(prefix))) out = !negated;
    }
    return out;
  };

  it('keeps secrets, installed modules, data, build output and tests out of the build context', () => {
    for (const path of [
      '.env',
      '.env.production',
      'node_modules/kysely/package.json',
      'data/warehouse.sqlite',
      'dist/src/cli/bin.js',
      'test/e2e/cli.test.ts',
      '.git/config',
      'config/local.json',
      'demo.sqlite',
    ]) {
      expect(ignored(path), path).toBe(true);
    }
  });

  it('sends what the Dockerfile copies', () => {
    for (const path of [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'scripts/build.mjs',
      'src/cli/main.ts',
      'src/dashboard/assets/dashboard.js',
      'jobs/export-slice/handler.ts',
      'config/default.json',
    ]) {
      expect(ignored(path), path).toBe(false);
    }
    for (const copied of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const source of copied[1]!.split(' ')) expect(ignored(source), source).toBe(false);
    }
  });
});

describe('the compose Postgres password', () => {
  it('comes from .env (POSTGRES_PASSWORD), never from the file', () => {
    // Compose's own ${…} interpolation, checked as written: no template strings meant here.
    const text = readFileSync(new URL('docker-compose.yml', root), 'utf8');
    expect(compose.services.postgres?.environment?.POSTGRES_PASSWORD).toBe('${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env (letters and digits)}');
    expect(compose.services.worker?.environment?.DATABASE_URL).toContain(':${POSTGRES_PASSWORD:?');
    expect(text).not.toMatch(/POSTGRES_PASSWORD: (?!\$\{)/);
    expect(readFileSync(new URL('config/.env.example', root), 'utf8')).toMatch(/^# POSTGRES_PASSWORD=$/m);
  });
});
