/**
 * The framing between the host and a live interpreter (sandbox/live-jail.ts): each message is an 8-byte header
 * (big-endian u32 length of a JSON head, u32 length of a raw body), the JSON head, then the body (workbook bytes,
 * or nothing). Both runners (py-runner.ts, node-runner.ts) speak it over their protocol pipes.
 */

export interface Frame {
  head: Record<string, unknown>;
  body: Buffer;
}

/**
 * A frame's bytes. With `bodyLength` (and no body) only the header and the head: the caller writes the body's bytes
 * right after them, without a copy into one buffer.
 */
export function encodeFrame(
  head: Record<string, unknown>,
  body: Buffer = Buffer.alloc(0),
  bodyLength = body.length,
): Buffer {
  const json = Buffer.from(JSON.stringify(head), "utf8");
  const hdr = Buffer.alloc(8);
  hdr.writeUInt32BE(json.length, 0);
  hdr.writeUInt32BE(bodyLength, 4);
  return body.length ? Buffer.concat([hdr, json, body]) : Buffer.concat([hdr, json]);
}

/** A frame the interpreter sent that breaks the protocol (oversized, or not JSON): the interpreter is dropped. */
export class FrameError extends Error {
  override name = "FrameError";
}

/**
 * Splits a byte stream into frames; heads and bodies past the caps are refused before they are buffered. Once a
 * frame's header is in, its whole size is allocated and each chunk is copied in as it arrives: no step copies more
 * than one pipe chunk (joining the chunks on every chunk, as before, copied a 64 MB workbook hundreds of times on
 * the env's event loop; joining them once at the end still held it for one big copy).
 */
export class FrameReader {
  /** Bytes received before the current frame's header was complete. */
  private chunks: Buffer[] = [];
  private size = 0;
  /** The frame being received (header, head and body), and how much of it is in. */
  private frame?: Buffer;
  private filled = 0;

  constructor(
    private readonly maxHead: number,
    private readonly maxBody: number,
  ) {}

  push(chunk: Buffer): Frame[] {
    const out: Frame[] = [];
    let rest = chunk;
    while (rest.length) {
      if (!this.frame) {
        this.chunks.push(rest);
        this.size += rest.length;
        if (this.size < 8) break;
        const buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size);
        this.chunks = [];
        this.size = 0;
        const headLen = buf.readUInt32BE(0);
        const bodyLen = buf.readUInt32BE(4);
        if (headLen > this.maxHead) throw new FrameError(`a message head of ${headLen} bytes (cap ${this.maxHead})`);
        if (bodyLen > this.maxBody) throw new FrameError(`a message body of ${bodyLen} bytes (cap ${this.maxBody})`);
        const total = 8 + headLen + bodyLen;
        this.frame = Buffer.allocUnsafeSlow(total);
        this.filled = buf.copy(this.frame, 0, 0, Math.min(total, buf.length));
        rest = buf.subarray(this.filled);
      } else {
        const n = rest.copy(this.frame, this.filled, 0, Math.min(rest.length, this.frame.length - this.filled));
        this.filled += n;
        rest = rest.subarray(n);
      }
      if (this.filled === this.frame.length) {
        out.push(parseFrame(this.frame));
        this.frame = undefined;
        this.filled = 0;
      }
    }
    return out;
  }
}

function parseFrame(buf: Buffer): Frame {
  const headLen = buf.readUInt32BE(0);
  let head: unknown;
  try {
    head = JSON.parse(buf.subarray(8, 8 + headLen).toString("utf8"));
  } catch {
    throw new FrameError("a message head that is not JSON");
  }
  if (!head || typeof head !== "object" || Array.isArray(head))
    throw new FrameError("a message head that is not an object");
  return { head: head as Record<string, unknown>, body: buf.subarray(8 + headLen) };
}
