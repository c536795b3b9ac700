import { equalsBytes } from "../auth.js";

/** What the table keeps of a live rollout. */
export interface TableEntry {
  readonly id: string;
  readonly tokenBytes: Buffer;
  /** Its slot in the table (`claim`): a minted id ends in `.N`, its token in `~N`. */
  readonly slot: number;
}

/**
 * The slot a minted id (`sep` "."; OpenEnv's session ids put a "." between id and token) or token (`sep` "~") names:
 * its `<sep>N` suffix, N decimal and canonical. -1 when it names none.
 */
export function slotOf(s: string, sep: "." | "~"): number {
  const dot = s.lastIndexOf(sep);
  const n = s.length - dot - 1;
  if (dot < 0 || n < 1 || n > 9) return -1;
  let v = 0;
  for (let i = dot + 1; i < s.length; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9 || (c === 0 && i === dot + 1 && n > 1)) return -1;
    v = v * 10 + c;
  }
  return v;
}

/**
 * The live rollouts, by id and by token. A rollout the service mints an id and a token for gets a slot, and both end
 * in the slot's number (`.N` and `~N`): finding it is an array read and a comparison, and adding or removing it writes one
 * array element. Ids a client chose (OpenEnv's `episode_id`) are kept in a Map of their own.
 *
 * Not a Map for every rollout: a long-lived Map with an insert and a delete per rollout (it grows and shrinks its
 * table as rollouts come and go) cost about 3.5 µs of server CPU per episode on Node 20 for the two of them (id and
 * token), more than anything else the service does per episode outside the env.
 */
export class RolloutTable<R extends TableEntry> {
  private readonly slots: (R | undefined)[] = [];
  /** Slots free again, reused last-freed first. */
  private readonly free: number[] = [];
  /** Slots handed out so far (the next new one). */
  private next = 0;
  /** Rollouts whose id does not name their own slot (ids a client chose). */
  private readonly chosen = new Map<string, R>();
  /** Live rollouts. */
  size = 0;

  /** A slot for a new rollout, to `add` at once: its minted id ends in `.${slot}`, its token in `~${slot}`. */
  claim(): number {
    return this.free.pop() ?? this.next++;
  }

  add(r: R): void {
    while (this.slots.length <= r.slot) this.slots.push(undefined);
    this.slots[r.slot] = r;
    // an id that does not name its own slot (a client chose it) is found through `chosen`
    if (slotOf(r.id, ".") !== r.slot) this.chosen.set(r.id, r);
    this.size++;
  }

  /** Remove a live rollout (a no-op for one that is not this table's live entry). */
  remove(r: R): boolean {
    if (this.slots[r.slot] !== r) return false;
    this.slots[r.slot] = undefined;
    this.free.push(r.slot);
    if (this.chosen.get(r.id) === r) this.chosen.delete(r.id);
    this.size--;
    return true;
  }

  /** Whether `r` is live here. */
  holds(r: R): boolean {
    return this.slots[r.slot] === r;
  }

  /** The live rollout with this id, or undefined. */
  get(id: string): R | undefined {
    const slot = slotOf(id, ".");
    if (slot >= 0) {
      const r = this.slots[slot];
      if (r !== undefined && r.id === id) return r;
    }
    return this.chosen.size === 0 ? undefined : this.chosen.get(id);
  }

  /** The live rollout this token opens (compared in constant time), or undefined. */
  byToken(token: string): R | undefined {
    const slot = slotOf(token, "~");
    const r = slot >= 0 ? this.slots[slot] : undefined;
    return r !== undefined && equalsBytes(token, r.tokenBytes) ? r : undefined;
  }

  *values(): IterableIterator<R> {
    for (const r of this.slots) if (r !== undefined) yield r;
  }
}
