import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { Request, Router } from 'express';

/**
 * Bull Board's own page links a web font from Google; the dashboard promises no request leaves the
 * machine, so the link is dropped as the page is rendered (the UI falls back to system fonts).
 */
class OfflineExpressAdapter extends ExpressAdapter {
  override setViewsPath(viewPath: string): this {
    super.setViewsPath(viewPath);
    // Express keeps the engine setViewsPath registered under `engines`; wrap it rather than depend on ejs ourselves.
    type Render = (path: string, data: object, done: (error: Error | null, html?: string) => void) => void;
    const app = this.getRouter() as unknown as { engines: Record<string, Render>; engine(ext: string, render: Render): void };
    const render = app.engines['.ejs'];
    if (render) {
      app.engine('ejs', (path, data, done) => render(path, data, (error, html) => done(error, html?.replace(/<link[^>]+fonts\.googleapis\.com[^>]*>/g, ''))));
    }
    return this;
  }
}

/**
 * Most jobs one list view of Bull Board shows. Its API takes any `jobsPerPage`, and reads and
 * formats that many jobs in one answer; a queue of a backfill holds tens of thousands.
 */
export const MAX_JOBS_PER_PAGE = 100;

/**
 * Bull Board for the export queue, read-only (no retry, clean or delete buttons, and the router
 * refuses every method but GET and HEAD), its list views at most {@link MAX_JOBS_PER_PAGE} jobs a
 * page, to be mounted at `basePath`.
 */
export function bullBoardRouter(queue: Queue, basePath: string): Router {
  const adapter = new OfflineExpressAdapter();
  adapter.setBasePath(basePath);
  createBullBoard({
    queues: [new BullMQAdapter(queue, { readOnlyMode: true, description: 'one export job per slice (portfolio, report type, date)' })],
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'report-sync queue' } },
  });
  const board = adapter.getRouter() as Router;
  const readOnly: Router = ((req, res, next) => {
    if (req.method === 'GET' || req.method === 'HEAD') {
      capJobsPerPage(req);
      return board(req, res, next);
    }
    res.status(405).set('Allow', 'GET, HEAD').type('text/plain').send('the dashboard is read-only: use the report-sync commands to change the queue\n');
  }) as Router;
  return readOnly;
}

/**
 * A larger `jobsPerPage` (the page's own setting goes to 300) is lowered to the cap, in the URL
 * Bull Board reads its query from: the page then counts its pages by the cap too.
 */
function capJobsPerPage(req: Request): void {
  const question = req.url.indexOf('?');
  if (question < 0) return;
  const params = new URLSearchParams(req.url.slice(question + 1));
  if (!params.getAll('jobsPerPage').some((asked) => Number(asked) > MAX_JOBS_PER_PAGE)) return;
  params.set('jobsPerPage', String(MAX_JOBS_PER_PAGE));
  req.url = `${req.url.slice(0, question)}?${params}`;
}
