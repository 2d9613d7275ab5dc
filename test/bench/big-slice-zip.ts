import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import unzipper from 'unzipper';
import { renderZip } from '../../src/simulator/render-export.js';
import { lazySyntheticReport } from '../../src/simulator/synthetic-reports.js';

/** The slice the big-slice benchmark loads. */
export const BIG_SLICE = { portfolioId: 1001, reportType: 'constituent.close', reportDate: '2024-03-01' } as const;

/**
 * Writes the big slice's export: one `constituent.close` ZIP holding `rows` CSV rows, deflated
 * from a stream so the sizes sit in a data descriptor after the data (as Java's ZipOutputStream
 * writes them), with the simulator's awkward values (20-digit decimals, quoted commas, quotes and
 * line breaks). Also unpacks the CSV beside it, byte for byte, for `psql \copy`.
 */
export async function writeBigSliceZip(zipPath: string, csvPath: string, rows: number): Promise<{ zipBytes: number; csvBytes: number }> {
  const report = lazySyntheticReport(BIG_SLICE, { sizes: { constituentRows: rows } });
  await pipeline(renderZip(report), createWriteStream(zipPath));
  const directory = await unzipper.Open.file(zipPath);
  const entry = directory.files.find((file) => file.path.endsWith('.csv'));
  if (!entry) throw new Error(`${zipPath} holds no CSV`);
  await pipeline(entry.stream(), createWriteStream(csvPath));
  return { zipBytes: (await stat(zipPath)).size, csvBytes: (await stat(csvPath)).size };
}
