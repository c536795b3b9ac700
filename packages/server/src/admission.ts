import { RolloutServiceError } from "./service/service-error.js";

const NONE: readonly never[] = Object.freeze([]);

/** What admission needs of a live rollout (or session): who holds it and when it was last used. */
export interface Admitted {
  /**
   * The client that created it: the identity of the token it presented (see `clientOf`), or its remote address on a
   * server without tokens; undefined for in-process callers.
   */
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
   * At capacity, a client within its fair share (`max` / clients) takes the place of rollouts held by clients over
   * their share, least recently used first. Only rollouts unused at least this long are taken (default 0: any
   * rollout with no request in flight, so the client gets its share at once, whatever the others do).
   */
  reclaimIdleMs?: number;
}

/** Clients at 0 entries whose keys are kept (see `byClient`) before they are dropped together. */
const MAX_IDLE_CLIENTS = 1024;

/**
 * Admission per client: a global cap, an optional per-client cap, and a guaranteed fair share at capacity (a client
 * within its share takes the room from the client most over its share, at once).
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
    this.reclaimIdleMs = options.reclaimIdleMs ?? 0;
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
   * room); throws `client_limit` (CLIENT_LIMIT) over the per-client cap, `capacity` (CAPACITY_REACHED) when nothing can
   * be reclaimed.
   *
   * At capacity, a client that stays within its fair share (`max` / clients holding entries, this one included,
   * rounded down) takes its room from the clients over theirs: one entry at a time from the client most over its
   * share, that client's least recently used entry first. Only entries with no request in flight (`busy` 0) and unused
   * for `reclaimIdleMs` (default 0: at once) are taken, and never so many that a client falls below its share. A client
   * at or over its share gets `capacity`.
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
    if (client === undefined) throw this.full(`server at capacity (${this.max} rollouts)`);
    // the clients holding entries (keys at 0 do not count), and this one
    let clients = held > 0 ? 0 : 1;
    for (const k of this.byClient.values()) if (k > 0) clients++;
    const fair = Math.floor(this.max / clients);
    if (held + n > fair) {
      throw this.full(
        clients === 1
          ? `server at capacity (${this.max} rollouts), every one held by client ${client}; retry when one is released`
          : `server at capacity (${this.max} rollouts): client ${client} holds ${held}, and ${held + n} would be over ` +
              `its fair share of ${fair} (${this.max} among ${clients} clients); retry when one of its rollouts is released`,
      );
    }
    const need = live.size + n - this.max;
    // reclaimable entries of the clients over their share, by client, least recently used first
    const byHolder = new Map<string, R[]>();
    for (const r of live.values()) {
      if (r.client === undefined || r.client === client || this.held(r.client) <= fair) continue;
      if (r.busy !== 0 || now - r.lastUsed < this.reclaimIdleMs) continue;
      let list = byHolder.get(r.client);
      if (!list) byHolder.set(r.client, (list = []));
      list.push(r);
    }
    for (const list of byHolder.values()) list.sort((a, b) => a.lastUsed - b.lastUsed);
    const left = new Map<string, number>();
    for (const c of byHolder.keys()) left.set(c, this.held(c));
    const taken: R[] = [];
    while (taken.length < need) {
      // the client most over its share that still has a reclaimable entry
      let most: string | undefined;
      let mostHeld = fair;
      for (const [c, list] of byHolder) {
        const h = left.get(c)!;
        if (list.length > 0 && h > mostHeld) {
          most = c;
          mostHeld = h;
        }
      }
      if (most === undefined) break;
      taken.push(byHolder.get(most)!.shift()!);
      left.set(most, mostHeld - 1);
    }
    if (taken.length < need) {
      throw this.full(
        `server at capacity (${this.max} rollouts): client ${client} is within its fair share of ${fair}, but every ` +
          `rollout of the clients over theirs has a request in flight${this.reclaimIdleMs > 0 ? ` or was used in the last ${this.reclaimIdleMs} ms` : ""}; retry shortly`,
      );
    }
    this.reclaimed += need;
    return taken;
  }

  private full(message: string): RolloutServiceError {
    return new RolloutServiceError("capacity", message, { reason: "CAPACITY_REACHED" });
  }
}
