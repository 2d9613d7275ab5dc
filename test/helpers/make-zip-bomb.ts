import { constants, crc32, deflateRawSync } from 'node:zlib';

export interface ZipBombOptions {
  /** Name of the one entry. @defaultValue 'bomb.csv' */
  readonly entryName?: string;
  /** Bytes the entry starts with (a CSV header). */
  readonly head: Buffer;
  /** Repeated after `head`; the whole of it compresses to about a thousandth of its size. */
  readonly unit: Buffer;
  readonly repeats: number;
  /** The uncompressed size written in the headers, if it should lie. @defaultValue the real size */
  readonly declaredSize?: number;
}

/** A ZIP bomb and what it really holds. */
export interface ZipBomb {
  readonly zip: Buffer;
  /** Bytes the entry inflates to. */
  readonly inflatedBytes: number;
}

/**
 * A one-entry ZIP whose entry inflates to `head` + `unit` × `repeats` bytes (a gigabyte fits in
 * about a megabyte), built without ever holding or deflating the whole: `unit` is deflated once
 * and ended with a full flush, which byte-aligns the stream and forgets the history, so copies of
 * that segment can simply be concatenated into one valid deflate stream. The CRC is right (computed
 * by combining CRCs), so only the size (when `declaredSize` says so) lies.
 */
export function makeZipBomb(options: ZipBombOptions): ZipBomb {
  const name = Buffer.from(options.entryName ?? 'bomb.csv');
  const full = { finishFlush: constants.Z_FULL_FLUSH, level: 9 };
  const segments = [deflateRawSync(options.head, full)];
  const unitSegment = deflateRawSync(options.unit, full);
  for (let i = 0; i < options.repeats; i += 1) segments.push(unitSegment);
  segments.push(deflateRawSync(Buffer.alloc(0))); // the final, empty block
  const data = Buffer.concat(segments);

  const inflatedBytes = options.head.length + options.unit.length * options.repeats;
  if (inflatedBytes > 0xffff_ffff) throw new Error('makeZipBomb writes no ZIP64 fields: keep the bomb under 4 GiB');
  const unitCrc = crc32(options.unit);
  let crc = crc32(options.head);
  // Doubling: the CRC of 2^k copies, combined into the running CRC for each set bit of `repeats`.
  let block = unitCrc;
  let blockLength = options.unit.length;
  for (let rest = options.repeats; rest > 0; rest = Math.floor(rest / 2)) {
    if (rest % 2 === 1) crc = crc32Combine(crc, block, blockLength);
    block = crc32Combine(block, block, blockLength);
    blockLength *= 2;
  }
  const declared = options.declaredSize ?? inflatedBytes;

  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4); // version needed
  local.writeUInt16LE(0x0800, 6); // UTF-8 name
  local.writeUInt16LE(8, 8); // deflate
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(declared, 22);
  local.writeUInt16LE(name.length, 26);

  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4); // version made by
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(0x0800, 8);
  central.writeUInt16LE(8, 10);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(declared, 24);
  central.writeUInt16LE(name.length, 28);
  central.writeUInt32LE(0, 42); // local header offset

  const centralOffset = local.length + name.length + data.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + name.length, 12);
  end.writeUInt32LE(centralOffset, 16);

  return { zip: Buffer.concat([local, name, data, central, name, end]), inflatedBytes };
}

/** zlib's crc32_combine: the CRC of A‖B from crc(A), crc(B) and B's length. */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB <= 0) return crcA;
  const even = new Uint32Array(32);
  const odd = new Uint32Array(32);
  odd[0] = 0xedb88320; // the CRC-32 polynomial: the operator for one zero bit
  for (let n = 1, row = 1; n < 32; n += 1, row <<= 1) odd[n] = row >>> 0;
  square(even, odd); // two zero bits
  square(odd, even); // four zero bits
  let crc = crcA >>> 0;
  let length = lengthB;
  // Apply the operator for one zero byte, then two, four… for each set bit of the length.
  do {
    square(even, odd);
    if (length % 2 === 1) crc = times(even, crc);
    length = Math.floor(length / 2);
    if (length === 0) break;
    square(odd, even);
    if (length % 2 === 1) crc = times(odd, crc);
    length = Math.floor(length / 2);
  } while (length !== 0);
  return (crc ^ crcB) >>> 0;
}

function times(matrix: Uint32Array, vector: number): number {
  let sum = 0;
  for (let i = 0, v = vector >>> 0; v !== 0; i += 1, v >>>= 1) if (v & 1) sum ^= matrix[i]!;
  return sum >>> 0;
}

function square(target: Uint32Array, matrix: Uint32Array): void {
  for (let n = 0; n < 32; n += 1) target[n] = times(matrix, matrix[n]!);
}
