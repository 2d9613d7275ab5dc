import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import type { Router } from 'express';

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
 * Bull Board for the export queue, read-only (no retry, clean or delete buttons, and the router
 * refuses every method but GET and HEAD), to be mounted at `basePath`.
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
    if (req.method === 'GET' || req.method === 'HEAD') return board(req, res, next);
    res.status(405).set('Allow', 'GET, HEAD').type('text/plain').send('the dashboard is read-only: use the report-sync commands to change the queue\n');
  }) as Router;
  return readOnly;
}
