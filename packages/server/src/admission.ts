import { RolloutServiceError } from "./service/service-error.js";

const NONE: readonly never[] = Object.freeze([]);

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

/** Clients at 0 entries whose keys are kept (see `byClient`) before they are dropped together. */
const MAX_IDLE_CLIENTS = 1024;

/**
 * Admission per client: a global cap, an optional per-client cap, and fair-share reclaim of idle rollouts at capacity.
 * The caller keeps the entries and reports them (`add` / `remove`: a count per client, cheap on every create); `admit`
 * decides, and at capacity looks through the live entries for the ones to release first.
 */
export class Admission<R extends Admitted> {
  readonly max: number;
  readonly maxPerClient: number;
  readonly reclaimIdleMs: number;
  /**
   * Entries per client. A client whose count falls to 0 keeps its key (an update in place: a long-lived Map with a
   * delete and an insert per rollout of a one-connection client costs a microsecond or more on Node 20); the zeros are
   * dropped once there are more than MAX_IDLE_CLIENTS of them.
   */
  private readonly byClient = new Map<string, number>();
  /** Keys of `byClient` at 0. */
  private idleClients = 0;
  /** Entries released to make room for another client. */
  reclaimed = 0;

  constructor(options: AdmissionOptions) {
    this.max = options.max;
    this.maxPerClient = options.maxPerClient ?? options.max;
    this.reclaimIdleMs = options.reclaimIdleMs ?? 30_000;
  }

  /** Entries `client` holds now. */
  held(client: string | undefined): number {
    return client === undefined ? 0 : (this.byClient.get(client) ?? 0);
  }

  add(r: R): void {
    if (r.client === undefined) return;
    const n = this.byClient.get(r.client);
    if (n === 0) this.idleClients--;
    this.byClient.set(r.client, (n ?? 0) + 1);
  }

  remove(r: R): void {
    if (r.client === undefined) return;
    const n = this.byClient.get(r.client);
    if (n === undefined || n === 0) return;
    this.byClient.set(r.client, n - 1);
    if (n > 1) return;
    if (++this.idleClients > MAX_IDLE_CLIENTS) {
      for (const [c, k] of this.byClient) if (k === 0) this.byClient.delete(c);
      this.idleClients = 0;
    }
  }

  /**
   * May `client` add `n` entries to the `live` ones? Returns the entries to release first (empty when there is
   * room); throws `client_limit` (CLIENT_LIMIT) over the per-client cap, `capacity` (CAPACITY_REACHED) when nothing can be reclaimed.
   */
  admit(
    client: string | undefined,
    n: number,
    live: { readonly size: number; values(): Iterable<R> },
    now = Date.now(),
  ): readonly R[] {
    const held = this.held(client);
    if (client !== undefined && this.maxPerClient < this.max && held + n > this.maxPerClient) {
      throw new RolloutServiceError(
        "client_limit",
        `client ${client} holds ${held} rollouts; at most ${this.maxPerClient} per client`,
        { reason: "CLIENT_LIMIT" },
      );
    }
    if (live.size + n <= this.max) return NONE;
    const full = () =>
      new RolloutServiceError("capacity", `server at capacity (${this.max} rollouts)`, { reason: "CAPACITY_REACHED" });
    if (client === undefined) throw full();
    // the clients holding entries (keys at 0 do not count), and this one
    let clients = held > 0 ? 0 : 1;
    for (const k of this.byClient.values()) if (k > 0) clients++;
    const fair = Math.floor(this.max / clients);
    if (held + n > fair) throw full();
    const need = live.size + n - this.max;
    // idle entries of clients over their share, least recently used first, at most each one's excess
    const idleOf = new Map<string, R[]>();
    for (const r of live.values()) {
      if (r.client === undefined || r.client === client || this.held(r.client) <= fair) continue;
      if (r.busy !== 0 || now - r.lastUsed < this.reclaimIdleMs) continue;
      let list = idleOf.get(r.client);
      if (!list) idleOf.set(r.client, (list = []));
      list.push(r);
    }
    const candidates: R[] = [];
    for (const [c, list] of idleOf) {
      list.sort((a, b) => a.lastUsed - b.lastUsed);
      candidates.push(...list.slice(0, this.held(c) - fair));
    }
    if (candidates.length < need) throw full();
    candidates.sort((a, b) => a.lastUsed - b.lastUsed);
    this.reclaimed += need;
    return candidates.slice(0, need);
  }
}
