import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = new URL('../../', import.meta.url);
const compose = parse(readFileSync(new URL('docker-compose.yml', root), 'utf8'), { merge: true }) as {
  services: Record<string, { command?: string[]; healthcheck?: { test?: string[] }; env_file?: string; depends_on?: Record<string, { condition: string }>; deploy?: { replicas?: number }; environment?: Record<string, string>; image?: string; build?: string }>;
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
      expect(service.environment?.DATABASE_URL).toMatch(/^postgres:\/\/.+@postgres:5432\//);
      expect(service.environment?.REDIS_URL).toBe('redis://redis:6379');
    }
  });
});

describe('Dockerfile', () => {
  it('is multi-stage on a current Node LTS slim image, production dependencies only, non-root', () => {
    const stages = dockerfile.match(/^FROM .+$/gm) ?? [];
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage).toMatch(/^FROM node:(22|24)-slim/);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/ENTRYPOINT \["node", "src\/cli\/bin\.mjs"\]/);
  });
});
