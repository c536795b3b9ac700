import { HttpError } from "./http-error.js";

/** What admission needs of a live rollout (or session): who holds it and when it was last used. */
export interface Admitted {
  /** The client that created it (its remote address); undefined for in-process callers. */
  client?: string;
  /** Requests in flight on it. */
  busy: number;
  lastUsed: number;
}

export interface AdmissionOptions {
  /** Live entries at most, every client together. */
  max: number;
  /** One client may hold at most this many (default: `max`). Beyond it: 429 CLIENT_LIMIT. */
  maxPerClient?: number;
  /**
   * At capacity, a client holding less than its fair share (`max` / clients) takes the place of rollouts idle at
   * least this long held by clients over their share, least recently used first (default 30 s). So one client that
   * fills the server and leaves its rollouts idle blocks the others for this long, not for the idle timeout.
   */
  reclaimIdleMs?: number;
}

/**
 * Admission per client: a global cap, an optional per-client cap, and fair-share reclaim of idle rollouts at capacity.
 * The caller keeps the entries (`add` / `remove`); `admit` decides and names the entries to release first.
 */
export class Admission<R extends Admitted> {
  readonly max: number;
  readonly maxPerClient: number;
  readonly reclaimIdleMs: number;
  private readonly byClient = new Map<string, Set<R>>();
  /** Entries released to make room for another client. */
  reclaimed = 0;

  constructor(options: AdmissionOptions) {
    this.max = options.max;
    this.maxPerClient = options.maxPerClient ?? options.max;
    this.reclaimIdleMs = options.reclaimIdleMs ?? 30_000;
  }

  /** Entries `client` holds now. */
  held(client: string | undefined): number {
    return client === undefined ? 0 : (this.byClient.get(client)?.size ?? 0);
  }

  add(r: R): void {
    if (r.client === undefined) return;
    let set = this.byClient.get(r.client);
    if (!set) this.byClient.set(r.client, (set = new Set()));
    set.add(r);
  }

  remove(r: R): void {
    if (r.client === undefined) return;
    const set = this.byClient.get(r.client);
    if (!set) return;
    set.delete(r);
    if (set.size === 0) this.byClient.delete(r.client);
  }

  /**
   * May `client` add `n` entries while `live` are live? Returns the entries to release first (empty when there is
   * room); throws 429 CLIENT_LIMIT over the per-client cap, 503 CAPACITY_REACHED when nothing can be reclaimed.
   */
  admit(client: string | undefined, n: number, live: number, now = Date.now()): R[] {
    const held = this.held(client);
    if (client !== undefined && this.maxPerClient < this.max && held + n > this.maxPerClient) {
      throw new HttpError(
        429,
        "CLIENT_LIMIT",
        `client ${client} holds ${held} rollouts; at most ${this.maxPerClient} per client`,
      );
    }
    if (live + n <= this.max) return [];
    const full = () => new HttpError(503, "CAPACITY_REACHED", `server at capacity (${this.max} rollouts)`);
    if (client === undefined) throw full();
    const clients = this.byClient.size + (this.byClient.has(client) ? 0 : 1);
    const fair = Math.floor(this.max / clients);
    if (held + n > fair) throw full();
    const need = live + n - this.max;
    const candidates: R[] = [];
    for (const [c, set] of this.byClient) {
      if (c === client || set.size <= fair) continue;
      const idle = [...set]
        .filter((r) => r.busy === 0 && now - r.lastUsed >= this.reclaimIdleMs)
        .sort((a, b) => a.lastUsed - b.lastUsed);
      candidates.push(...idle.slice(0, set.size - fair));
    }
    if (candidates.length < need) throw full();
    candidates.sort((a, b) => a.lastUsed - b.lastUsed);
    this.reclaimed += need;
    return candidates.slice(0, need);
  }
}
