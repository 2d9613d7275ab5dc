import { Readable } from 'node:stream';
import yazl from 'yazl';
import type { LazySyntheticReport } from './synthetic-reports.js';
import { columnValue } from './synthetic-reports.js';

/** The JSON export: an array of records, decimals as raw number literals (so only a lossless reader keeps them). */
export function* renderJson(report: LazySyntheticReport): Generator<string> {
  yield '[';
  let first = true;
  for (const row of report.rows()) {
    const fields = report.columns.map((column) => {
      const value = columnValue(report, row, column);
      const rendered = column.decimal && value !== '' ? value : value === '' && column.decimal ? 'null' : JSON.stringify(value);
      return `${JSON.stringify(column.json)}:${rendered}`;
    });
    yield `${first ? '' : ','}\n  {${fields.join(',')}}`;
    first = false;
  }
  yield '\n]\n';
}

/** The CSV inside the ZIP: a UTF-8 BOM, a header row, CRLF line ends, quoting where needed. */
export function* renderCsv(report: LazySyntheticReport): Generator<string> {
  yield `\uFEFF${report.columns.map((column) => quoteCsv(column.csv)).join(',')}\r\n`;
  let batch = '';
  let inBatch = 0;
  for (const row of report.rows()) {
    batch += `${report.columns.map((column) => quoteCsv(columnValue(report, row, column))).join(',')}\r\n`;
    inBatch += 1;
    if (inBatch === 500) {
      yield batch;
      batch = '';
      inBatch = 0;
    }
  }
  if (batch !== '') yield batch;
}

/**
 * The ZIP export holding one CSV entry, deflated from a stream, so yazl writes the sizes in a
 * data descriptor after the data, as Java's ZipOutputStream does.
 */
export function renderZip(report: LazySyntheticReport): Readable {
  const zip = new yazl.ZipFile();
  zip.addReadStream(Readable.from(renderCsv(report)), `${report.fileBaseName}.csv`, { compress: true, mtime: new Date('2024-01-01T00:00:00Z') });
  zip.end();
  return zip.outputStream as Readable;
}

function quoteCsv(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}
