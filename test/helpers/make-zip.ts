import { Readable } from 'node:stream';
import yazl from 'yazl';

/** A ZIP built in memory with yazl: `stream` entries get data descriptors, as streaming writers do. */
export function makeZip(entries: Record<string, string | Buffer>, options: { stream?: boolean; compress?: boolean; forceZip64Format?: boolean } = {}): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const { stream, ...entryOptions } = options;
  for (const [name, content] of Object.entries(entries)) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
    if (name.endsWith('/')) zip.addEmptyDirectory(name);
    else if (stream) zip.addReadStream(Readable.from([data]), name, entryOptions);
    else zip.addBuffer(data, name, entryOptions);
  }
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
}
