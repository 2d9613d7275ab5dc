import { Readable } from 'node:stream';
import yazl from 'yazl';

/** A ZIP built in memory with yazl: `stream` entries get data descriptors, as streaming writers do. */
export function makeZip(entries: Record<string, string | Buffer>, options: { stream?: boolean } = {}): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(entries)) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
    if (name.endsWith('/')) zip.addEmptyDirectory(name);
    else if (options.stream) zip.addReadStream(Readable.from([data]), name);
    else zip.addBuffer(data, name);
  }
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
}
