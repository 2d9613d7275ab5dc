import { startHttpServer } from './http-server.js';

/** An export file as the gateway of the test serves it. */
export interface ServedFile {
  readonly body: Buffer;
  readonly contentType: string;
  readonly fileName: string;
  /** Sent as Content-Encoding (the body must already be encoded so). */
  readonly contentEncoding?: string;
}

/** An export gateway of the test's own: it serves the files the test sets per slice, and no data for the rest. */
export interface FileGateway {
  /** `REPORT_BASE_URL` for it. */
  readonly url: string;
  serve(portfolioId: number, reportType: string, date: string, file: ServedFile): void;
  forget(portfolioId: number, reportType: string, date: string): void;
  close(): Promise<void>;
}

/**
 * Starts a gateway answering the export endpoint with the file set for the slice asked (its
 * Content-Type, Content-Disposition, Content-Length and any Content-Encoding), or with the spec's empty 200 for a slice
 * it holds nothing for. It checks no token: the simulator beside it issues those.
 */
export async function startFileGateway(): Promise<FileGateway> {
  const files = new Map<string, ServedFile>();
  const key = (portfolioId: number, reportType: string, date: string) => `${portfolioId}|${reportType}|${date}`;
  const server = await startHttpServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://upstream');
    const portfolioId = Number(/\/portfolio\/(\d+)\/export$/.exec(url.pathname)?.[1]);
    const file = files.get(key(portfolioId, url.searchParams.get('reportType') ?? '', url.searchParams.get('date') ?? ''));
    if (!file) {
      res.writeHead(200, { 'content-length': '0' });
      res.end();
      return;
    }
    res.writeHead(200, {
      'content-type': file.contentType,
      'content-disposition': `attachment; filename="${file.fileName}"`,
      'content-length': String(file.body.length),
      ...(file.contentEncoding ? { 'content-encoding': file.contentEncoding } : {}),
    });
    res.end(file.body);
  });
  return {
    url: server.url,
    serve: (portfolioId, reportType, date, file) => files.set(key(portfolioId, reportType, date), file),
    forget: (portfolioId, reportType, date) => files.delete(key(portfolioId, reportType, date)),
    close: () => server.close(),
  };
}
