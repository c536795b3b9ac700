import type { Database } from "sql.js";
import { SCHEMA, type Schema } from "./schema.js";
import { SfError } from "./sf-error.js";
import { parseSoql } from "./soql-parser.js";
import { type TranslatedQuery, translateSoql } from "./soql-translate.js";

/** Limits that keep a tool result readable. */
export interface ResultLimits {
  /** Most records returned in one result (default 200). */
  maxRecords?: number;
  /** Stop adding records once the serialized records pass this many characters (default 12,000). */
  maxChars?: number;
}

/** A Salesforce REST query response (`attributes` removed, as the original CRM env does). */
export type QueryResult = {
  totalSize: number;
  done: boolean;
  records: Array<Record<string, unknown>>;
  /** Only when the result was cut: what to do about it. */
  message?: string;
};

const cache = new Map<string, TranslatedQuery>();
const schemaKeys = new WeakMap<Schema, number>();
let nextSchemaKey = 0;
function schemaKey(schema: Schema): number {
  let k = schemaKeys.get(schema);
  if (k === undefined) {
    k = nextSchemaKey++;
    schemaKeys.set(schema, k);
  }
  return k;
}
const CACHE_MAX = 1000;

/** Forget every cached translation (benchmarks measure uncached parsing with it). */
export function clearSoqlCache(): void {
  cache.clear();
}

/** Parse and translate a SOQL query, cached by text and `today`. */
export function compileSoql(text: string, today: string, schema: Schema = SCHEMA): TranslatedQuery {
  const key = `${schemaKey(schema)}\u0000${today}\u0000${text}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const t = translateSoql(parseSoql(text), { today, schema });
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(key, t);
  return t;
}

/** Decode one SQL row into a REST record with nested relationship objects. */
export function shapeRecord(t: TranslatedQuery, row: unknown[]): Record<string, unknown> {
  const rec: Record<string, unknown> = {};
  t.columns.forEach((c, i) => {
    let v = row[i] ?? null;
    if (c.type === "boolean" && v !== null) v = v === 1 || v === true;
    else if (typeof v === "number" && !Number.isInteger(v)) v = Number(v.toFixed(6));
    let target = rec;
    for (let k = 0; k < c.path.length - 1; k++) {
      const seg = c.path[k]!;
      let next = target[seg] as Record<string, unknown> | null | undefined;
      if (next === undefined || next === null) {
        next = {};
        target[seg] = next;
      }
      target = next;
    }
    target[c.path[c.path.length - 1]!] = v;
  });
  for (const j of t.joinChecks) {
    if (row[j.column] !== null && row[j.column] !== undefined) continue;
    let target: Record<string, unknown> | null = rec;
    for (let k = 0; k < j.path.length - 1 && target; k++) target = target[j.path[k]!] as Record<string, unknown> | null;
    if (target) target[j.path[j.path.length - 1]!] = null;
  }
  return rec;
}

/** Run a compiled query on a connection: every row is counted, the first ones (within the limits) returned. */
export function runCompiled(db: Database, t: TranslatedQuery, limits: ResultLimits = {}): QueryResult {
  const maxRecords = limits.maxRecords ?? 200;
  const maxChars = limits.maxChars ?? 12_000;
  const stmt = db.prepare(t.sql);
  try {
    stmt.bind(t.params);
    if (t.countOnly) {
      stmt.step();
      return { totalSize: Number(stmt.get()[0] ?? 0), done: true, records: [] };
    }
    const records: Array<Record<string, unknown>> = [];
    let total = 0;
    let chars = 0;
    let full = false;
    while (stmt.step()) {
      total++;
      if (full) continue;
      const rec = shapeRecord(t, stmt.get() as unknown[]);
      const size = JSON.stringify(rec).length + 1;
      if (records.length >= maxRecords || (records.length > 0 && chars + size > maxChars)) {
        full = true;
        continue;
      }
      chars += size;
      records.push(rec);
    }
    const out: QueryResult = { totalSize: total, done: records.length === total, records };
    if (!out.done) {
      out.message = `Result truncated: ${records.length} of ${total} records shown. Narrow the WHERE clause, select fewer fields, or page with LIMIT/OFFSET.`;
    }
    return out;
  } finally {
    stmt.free();
  }
}

/** Parse, translate and run a SOQL query. Bad queries throw SfError (MALFORMED_QUERY, INVALID_FIELD, INVALID_TYPE). */
export function runSoql(
  db: Database,
  text: string,
  today: string,
  limits?: ResultLimits,
  schema: Schema = SCHEMA,
): QueryResult {
  if (typeof text !== "string" || !text.trim()) throw new SfError("MALFORMED_QUERY", "empty query");
  return runCompiled(db, compileSoql(text.trim(), today, schema), limits);
}
