import type { RolloutResult } from "@benchmax/core";

/** Room the buffer starts with and shrinks back to after a large batch (bytes). */
const BASE_BYTES = 64 * 1024;

/**
 * A finished rollout's line in two parts, serialized once: its record without `explain` (what the live feed shows:
 * `explain` holds the gold beside the extracted answer, and diff lines that may quote gold values) and `explain`'s
 * JSON (undefined when it has none). The file's line is the first with `,"explain":<second>` before its last brace.
 * Throws when JSON cannot hold the record (a cycle, a BigInt).
 */
function recordParts(r: RolloutResult): { feed: string; explain: string | undefined } {
  const explain = r.explain;
  if (explain === undefined) return { feed: JSON.stringify(r), explain: undefined };
  r.explain = undefined;
  let feed: string;
  try {
    feed = JSON.stringify(r);
  } finally {
    r.explain = explain;
  }
  return { feed, explain: JSON.stringify(explain) };
}

/**
 * results.jsonl lines waiting for their write, encoded as UTF-8 the moment their rollout is added, into one buffer
 * outside the JS heap. A recorder batches a few milliseconds of rollouts into one write; kept as objects (or as
 * strings) until then, every rollout of the window was copied by each young-generation GC that ran meanwhile, which
 * cost the recording server more CPU than encoding the line early. Only numbers stay on the heap: where each line
 * ends, and where its feed form ends.
 */
export class PendingLines {
  private buf = Buffer.allocUnsafeSlow(BASE_BYTES);
  /** Bytes in use. */
  length = 0;
  /** Per line, the offset just past its newline (in this buffer). */
  ends: number[] = [];
  /**
   * Per line, where its feed form ends, last brace excluded: the line's record without `explain` is the bytes from
   * the line's start to here, then `}`.
   */
  feedEnds: number[] = [];
  /** Bytes at the front already in the file (a write that failed part-way): the next write starts after them. */
  written = 0;

  get count(): number {
    return this.ends.length;
  }

  /** The lines waiting, as one view of the buffer: valid until the next `add` or `clear`. */
  get bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }

  /** Encode `r`'s line and its newline; returns its bytes. Throws, adding nothing, when JSON cannot hold `r`. */
  add(r: RolloutResult): number {
    const { feed, explain } = recordParts(r);
    // UTF-16 code units to UTF-8 bytes: at most 3 each (a surrogate pair, two units, is 4 bytes)
    this.reserve(3 * (feed.length + (explain?.length ?? 0)) + 16);
    const b = this.buf;
    const start = this.length;
    let at = start;
    let feedEnd: number;
    if (explain === undefined) {
      at += b.write(feed, at);
      feedEnd = at - 1;
      b[at++] = 0x0a;
    } else if (feed === "{}") {
      feedEnd = at + 1;
      at += b.write(`{"explain":${explain}}\n`, at);
    } else {
      // the feed form's last brace is overwritten: the explain goes inside the object
      feedEnd = at + b.write(feed, at) - 1;
      at = feedEnd + b.write(`,"explain":${explain}}\n`, feedEnd);
    }
    this.length = at;
    this.ends.push(at);
    this.feedEnds.push(feedEnd);
    return at - start;
  }

  /** Forget every line (once written), and give back a buffer a large batch grew. */
  clear(): void {
    this.length = 0;
    this.written = 0;
    this.ends = [];
    this.feedEnds = [];
    if (this.buf.length > 16 * BASE_BYTES) this.buf = Buffer.allocUnsafeSlow(BASE_BYTES);
  }

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const grown = Buffer.allocUnsafeSlow(size);
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
  }
}

/**
 * The feed's events for a written batch (`RolloutRecorder`'s `RecordedBatch`), rendered from its bytes: one
 * `rollout` event per line, its id the offset just past the line in the file, its data the line's record without
 * `explain`.
 */
export function feedEvents(start: number, bytes: Buffer, ends: readonly number[], feedEnds: readonly number[]): Buffer {
  const heads: string[] = new Array(ends.length);
  let total = 0;
  for (let i = 0; i < ends.length; i++) {
    const head = `id: ${start + ends[i]!}\nevent: rollout\ndata: `;
    heads[i] = head;
    total += head.length + (feedEnds[i]! - (i === 0 ? 0 : ends[i - 1]!)) + 3;
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (let i = 0; i < ends.length; i++) {
    at += out.write(heads[i]!, at, "latin1");
    at += bytes.copy(out, at, i === 0 ? 0 : ends[i - 1]!, feedEnds[i]!);
    out[at++] = 0x7d;
    out[at++] = 0x0a;
    out[at++] = 0x0a;
  }
  return out;
}
