import { inflateRawSync } from "node:zlib";

/** A corrupt or unsupported zip (an xlsx is a zip): the message says what is wrong. */
export class ZipError extends Error {
  override name = "ZipError";
}

interface Entry {
  method: number;
  compressedSize: number;
  size: number;
  localOffset: number;
}

/** Most bytes one entry may inflate to (a guard against zip bombs). */
const MAX_ENTRY_BYTES = 256 * 1024 * 1024;

/**
 * A minimal read-only zip reader: the central directory is indexed once, and only the entries asked for are
 * inflated (node's native zlib). Enough for xlsx (stored / deflated entries, no encryption, no zip64).
 */
export class ZipReader {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly buf: Buffer) {
    if (buf.length < 22) throw new ZipError("not a zip file (too short)");
    let eocd = -1;
    const stop = Math.max(0, buf.length - 22 - 0xffff);
    for (let i = buf.length - 22; i >= stop; i--) {
      if (buf.readUInt32LE(i) === 0x06054b50) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) throw new ZipError("not a zip file (no end-of-central-directory record)");
    const count = buf.readUInt16LE(eocd + 10);
    let p = buf.readUInt32LE(eocd + 16);
    if (p === 0xffffffff) throw new ZipError("zip64 archives are not supported");
    for (let i = 0; i < count; i++) {
      if (p + 46 > buf.length || buf.readUInt32LE(p) !== 0x02014b50) {
        throw new ZipError(`corrupt zip central directory (entry ${i})`);
      }
      const method = buf.readUInt16LE(p + 10);
      const compressedSize = buf.readUInt32LE(p + 20);
      const size = buf.readUInt32LE(p + 24);
      const nameLen = buf.readUInt16LE(p + 28);
      const extraLen = buf.readUInt16LE(p + 30);
      const commentLen = buf.readUInt16LE(p + 32);
      const localOffset = buf.readUInt32LE(p + 42);
      const name = buf.toString("utf8", p + 46, p + 46 + nameLen);
      this.entries.set(name, { method, compressedSize, size, localOffset });
      p += 46 + nameLen + extraLen + commentLen;
    }
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  /** One entry's bytes; `limit` (at most the per-entry cap) bounds what it may inflate to. */
  read(name: string, limit = MAX_ENTRY_BYTES): Buffer {
    const max = Math.max(0, Math.min(limit, MAX_ENTRY_BYTES));
    const e = this.entries.get(name);
    if (!e) throw new ZipError(`missing part "${name}"`);
    const p = e.localOffset;
    if (p + 30 > this.buf.length || this.buf.readUInt32LE(p) !== 0x04034b50) {
      throw new ZipError(`corrupt local header for "${name}"`);
    }
    const start = p + 30 + this.buf.readUInt16LE(p + 26) + this.buf.readUInt16LE(p + 28);
    const data = this.buf.subarray(start, start + e.compressedSize);
    if (data.length !== e.compressedSize) throw new ZipError(`truncated entry "${name}"`);
    if (e.size > max) throw new ZipError(`entry "${name}" is too large (${e.size} bytes, at most ${max})`);
    if (e.method === 0) return data;
    if (e.method !== 8) throw new ZipError(`unsupported compression method ${e.method} for "${name}"`);
    try {
      return inflateRawSync(data, { maxOutputLength: Math.max(1, max) });
    } catch (err) {
      throw new ZipError(`cannot inflate "${name}": ${(err as Error).message}`);
    }
  }

  readText(name: string): string {
    return this.read(name).toString("utf8");
  }
}
