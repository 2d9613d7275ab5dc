import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import unzipper from 'unzipper';

/** A CSV entry of a ZIP, read from its central directory. */
export type ZipCsvEntry = Awaited<ReturnType<typeof unzipper.Open.file>>['files'][number];

/**
 * The raw baselines' download, the same for every dialect: the export's ZIP to a file in `dir`,
 * then its CSV entry from the central directory, as anyone would write it with these libraries.
 */
export async function downloadExportCsv(url: string, headers: Readonly<Record<string, string>>, dir: string): Promise<ZipCsvEntry> {
  const zipPath = join(dir, 'export.zip');
  const response = await request(url, { headers });
  if (response.statusCode !== 200) throw new Error(`export answered ${response.statusCode}`);
  await pipeline(response.body, createWriteStream(zipPath));
  const directory = await unzipper.Open.file(zipPath);
  const entry = directory.files.find((file) => file.path.endsWith('.csv'));
  if (!entry) throw new Error('no CSV in the ZIP');
  return entry;
}
