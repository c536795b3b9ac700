import initSqlJs, { type Database, type SqlJsStatic } from "sql.js";
import { DEFAULT_TODAY, type GenerateOrgOptions, generateOrg } from "./generate-org.js";
import { SCHEMA, type Schema } from "./schema.js";

let sqlPromise: Promise<SqlJsStatic> | undefined;

/** The sql.js module (WebAssembly SQLite), loaded once per process. */
export function loadSqlJs(): Promise<SqlJsStatic> {
  sqlPromise ??= initSqlJs();
  return sqlPromise;
}

type SqlValue = string | number | null | Uint8Array;

/** The rows one rollout changed: object → Id → the full row after the change (column order of the table). */
type Overlay = Map<string, Map<string, SqlValue[]>>;

/**
 * A built org: its serialized bytes and one shared connection every rollout reads through.
 *
 * Writes are isolated per rollout by an overlay, at the cost of the rows a rollout changes (not a copy of the org):
 * a session keeps the after-image of each row it wrote. While a writing session works, its rows are applied to the
 * shared connection inside one open transaction; before anyone else uses the connection that transaction is rolled
 * back. sql.js is synchronous and JavaScript single-threaded, so one tool call runs against exactly one view.
 */
export class Org {
  /** Records per object. */
  readonly counts: Record<string, number>;
  private closed = false;
  /** The session whose overlay is applied to the connection now (inside an open transaction). */
  private applied: OrgSession | undefined;
  private readonly columnsCache = new Map<string, string[]>();
  private constructor(
    readonly sql: SqlJsStatic,
    readonly bytes: Uint8Array,
    private readonly db: Database,
    readonly today: string,
    counts: Record<string, number>,
    readonly schema: Schema,
  ) {
    this.counts = counts;
  }

  /** Generate an org deterministically from the options. */
  static async generate(options: GenerateOrgOptions = {}): Promise<Org> {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    let counts: Record<string, number>;
    try {
      counts = generateOrg(db, options);
    } catch (e) {
      db.close();
      throw e;
    }
    const bytes = db.export();
    db.close();
    return Org.fromBytes(SQL, bytes, options.today ?? DEFAULT_TODAY, counts);
  }

  /** Open an org from a SQLite file's bytes (e.g. one saved with `org.bytes`). */
  static async open(bytes: Uint8Array, today = DEFAULT_TODAY, schema: Schema = SCHEMA): Promise<Org> {
    const SQL = await loadSqlJs();
    return Org.fromBytes(SQL, bytes, today, undefined, schema);
  }

  private static fromBytes(
    SQL: SqlJsStatic,
    bytes: Uint8Array,
    today: string,
    counts?: Record<string, number>,
    schema: Schema = SCHEMA,
  ): Org {
    const db = new SQL.Database(bytes);
    // rollbacks of a writer's overlay touch only the pages it changed; keep that journal in memory
    db.exec("PRAGMA journal_mode = MEMORY");
    if (!counts) {
      counts = {};
      const res = db.exec(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`);
      for (const [name] of res[0]?.values ?? []) {
        const n = db.exec(`SELECT COUNT(*) FROM "${String(name).replace(/"/g, '""')}"`);
        counts[String(name)] = Number(n[0]?.values[0]?.[0] ?? 0);
      }
    }
    return new Org(SQL, bytes, db, today, counts, schema);
  }

  get totalRecords(): number {
    return Object.values(this.counts).reduce((a, b) => a + b, 0);
  }

  /** The connection with no rollout's writes applied (what every non-writing rollout reads). */
  get shared(): Database {
    return this.view(undefined);
  }

  /** The connection as `session` sees it: its overlay applied when it has one. */
  view(session: OrgSession | undefined): Database {
    if (this.closed) throw new Error("org is closed");
    const want = session?.hasOverlay ? session : undefined;
    if (this.applied === want) return this.db;
    if (this.applied) {
      this.db.exec("ROLLBACK");
      this.applied = undefined;
    }
    if (want) {
      this.db.exec("BEGIN");
      this.applied = want;
      try {
        for (const [object, rows] of want.overlayRows()) {
          const cols = this.columns(object);
          const st = this.db.prepare(
            `INSERT OR REPLACE INTO "${object}" (${cols.map((c) => `"${c}"`).join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
          );
          try {
            for (const row of rows.values()) st.run(row);
          } finally {
            st.free();
          }
        }
      } catch (e) {
        this.db.exec("ROLLBACK");
        this.applied = undefined;
        throw e;
      }
    }
    return this.db;
  }

  /** The connection for a write by `session`: its overlay applied, inside the open transaction. */
  writeView(session: OrgSession): Database {
    if (this.closed) throw new Error("org is closed");
    if (session.hasOverlay) return this.view(session);
    if (this.applied !== session) {
      this.view(undefined);
      this.db.exec("BEGIN");
      this.applied = session;
    }
    return this.db;
  }

  /** Column names of a table, in order. */
  columns(object: string): string[] {
    let cols = this.columnsCache.get(object);
    if (!cols) {
      const res = this.db.exec(`PRAGMA table_info("${object.replace(/"/g, '""')}")`);
      cols = (res[0]?.values ?? []).map((r) => String(r[1]));
      this.columnsCache.set(object, cols);
    }
    return cols;
  }

  /** Forget the applied overlay of a session that is going away. */
  detach(session: OrgSession): void {
    if (this.applied !== undefined && this.applied === session && !this.closed) {
      this.db.exec("ROLLBACK");
      this.applied = undefined;
    }
  }

  /** A private, writable copy of the whole org (the old per-writer cost; benchmarks use it as the baseline). */
  copy(): Database {
    if (this.closed) throw new Error("org is closed");
    const db = new this.sql.Database(this.bytes);
    db.exec("PRAGMA journal_mode = MEMORY");
    return db;
  }

  /** A per-rollout handle: shared reads, writes kept as an overlay of changed rows. */
  session(today?: string): OrgSession {
    if (this.closed) throw new Error("org is closed");
    return new OrgSession(this, today ?? this.today);
  }

  close(): void {
    if (this.closed) return;
    if (this.applied) this.detach(this.applied);
    this.closed = true;
    this.db.close();
  }
}

/** One rollout's view of the org. */
export class OrgSession {
  private overlay: Overlay | undefined;
  private released = false;
  /** Writes made by this rollout (for metadata). */
  writes = 0;
  constructor(
    readonly org: Org,
    /** This rollout's today (YYYY-MM-DD): the task's own date when it has one, else the org's. */
    readonly today: string = org.today,
  ) {}

  get schema(): Schema {
    return this.org.schema;
  }

  /** Has this rollout changed any row? */
  get isPrivate(): boolean {
    return this.hasOverlay;
  }

  get hasOverlay(): boolean {
    return this.overlay !== undefined && this.overlay.size > 0;
  }

  /** Rows this rollout changed. */
  get changedRows(): number {
    let n = 0;
    for (const rows of this.overlay?.values() ?? []) n += rows.size;
    return n;
  }

  /** @internal the overlay, for the org to replay. */
  overlayRows(): Overlay {
    return this.overlay ?? new Map();
  }

  /** The connection reads go through, showing this rollout's own writes. Use it synchronously. */
  get reader(): Database {
    if (this.released) throw new Error("rollout org session already released");
    return this.org.view(this);
  }

  /** The connection writes go through. After writing, call `changed` with each written row. */
  writer(): Database {
    if (this.released) throw new Error("rollout org session already released");
    return this.org.writeView(this);
  }

  /** Record the after-image of a row this rollout wrote (read back from the write view). */
  changed(object: string, id: string): void {
    const db = this.writer();
    const cols = this.org.columns(object);
    const res = db.exec(`SELECT ${cols.map((c) => `"${c}"`).join(", ")} FROM "${object}" WHERE "Id" = ?`, [id]);
    const row = res[0]?.values[0];
    if (!row) throw new Error(`crm: row ${object} ${id} vanished after a write`);
    this.overlay ??= new Map();
    let rows = this.overlay.get(object);
    if (!rows) {
      rows = new Map();
      this.overlay.set(object, rows);
    }
    rows.set(id, row as SqlValue[]);
  }

  /** A child session with the same data (a fork of a group): copies this one's changed rows. */
  fork(): OrgSession {
    const child = new OrgSession(this.org, this.today);
    if (this.overlay) {
      child.overlay = new Map([...this.overlay].map(([o, rows]) => [o, new Map(rows)]));
    }
    child.writes = this.writes;
    return child;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.org.detach(this);
    this.overlay = undefined;
  }
}
