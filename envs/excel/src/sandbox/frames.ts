/**
 * The framing between the host and a live interpreter (sandbox/live-jail.ts): each message is an 8-byte header
 * (big-endian u32 length of a JSON head, u32 length of a raw body), the JSON head, then the body (workbook bytes,
 * or nothing). Both runners (py-runner.ts, node-runner.ts) speak it over their protocol pipes.
 */

export interface Frame {
  head: Record<string, unknown>;
  body: Buffer;
}

export function encodeFrame(head: Record<string, unknown>, body: Buffer = Buffer.alloc(0)): Buffer {
  const json = Buffer.from(JSON.stringify(head), "utf8");
  const hdr = Buffer.alloc(8);
  hdr.writeUInt32BE(json.length, 0);
  hdr.writeUInt32BE(body.length, 4);
  return Buffer.concat([hdr, json, body]);
}

/** A frame the interpreter sent that breaks the protocol (oversized, or not JSON): the interpreter is dropped. */
export class FrameError extends Error {
  override name = "FrameError";
}

/**
 * Splits a byte stream into frames; heads and bodies past the caps are refused before they are buffered. Chunks are
 * joined once per frame, when the whole frame has arrived (joining on every chunk copied a 64 MB workbook's bytes
 * hundreds of times on the env's event loop).
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes of the frame being received (header, head and body), once its header is in. */
  private need = 0;

  constructor(
    private readonly maxHead: number,
    private readonly maxBody: number,
  ) {}

  push(chunk: Buffer): Frame[] {
    this.chunks.push(chunk);
    this.size += chunk.length;
    const out: Frame[] = [];
    for (;;) {
      if (!this.need) {
        if (this.size < 8) break;
        if (this.chunks[0]!.length < 8) this.chunks = [Buffer.concat(this.chunks)];
        const hdr = this.chunks[0]!;
        const headLen = hdr.readUInt32BE(0);
        const bodyLen = hdr.readUInt32BE(4);
        if (headLen > this.maxHead) throw new FrameError(`a message head of ${headLen} bytes (cap ${this.maxHead})`);
        if (bodyLen > this.maxBody) throw new FrameError(`a message body of ${bodyLen} bytes (cap ${this.maxBody})`);
        this.need = 8 + headLen + bodyLen;
      }
      if (this.size < this.need) break;
      const buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
      const total = this.need;
      const headLen = buf.readUInt32BE(0);
      this.need = 0;
      let head: unknown;
      try {
        head = JSON.parse(buf.subarray(8, 8 + headLen).toString("utf8"));
      } catch {
        throw new FrameError("a message head that is not JSON");
      }
      if (!head || typeof head !== "object" || Array.isArray(head))
        throw new FrameError("a message head that is not an object");
      const rest = buf.subarray(total);
      // a body that ends the buffer is handed out as is; one followed by more bytes is copied (it must not pin them)
      const body = buf.subarray(8 + headLen, total);
      out.push({ head: head as Record<string, unknown>, body: rest.length ? Buffer.from(body) : body });
      this.chunks = rest.length ? [rest] : [];
      this.size = rest.length;
    }
    return out;
  }
}
