import { readFile } from "node:fs/promises";
import { UsageError } from "@benchmax/core";
import type { Database } from "sql.js";
import { formatDate, formatDateTime } from "./date-literals.js";
import { to18 } from "./ids.js";
import { loadSqlJs, Org } from "./org.js";
import { buildSchema, type FieldDef, type FieldType, type ObjectDef, SCHEMA, schemaDdl } from "./schema.js";

const SF_ID = /^[a-zA-Z0-9]{15}(?:[a-zA-Z0-9]{3})?$/;
const SQLITE_MAGIC = "SQLite format 3\u0000";

type Cell = string | number | null | Uint8Array;

/** What loading a released org found. */
export interface LoadedOrgReport {
  /** Tables loaded as objects, with their record counts. */
  objects: Record<string, number>;
  /** Tables left out (no Id column), with why. */
  skipped: string[];
}

function qi(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function sample(db: Database, table: string, column: string, n = 200): Cell[] {
  const res = db.exec(`SELECT ${qi(column)} FROM ${qi(table)} WHERE ${qi(column)} IS NOT NULL LIMIT ${n}`);
  return (res[0]?.values ?? []).map((r) => r[0] as Cell);
}

function inferType(name: string, declared: string, values: Cell[]): FieldType {
  const decl = declared.toUpperCase();
  if (name === "Id") return "id";
  const strs = values.filter((v): v is string => typeof v === "string");
  const nums = values.filter((v): v is number => typeof v === "number");
  if (/^Is[A-Z]/.test(name) || decl.includes("BOOL")) {
    if (values.every((v) => v === 0 || v === 1 || (typeof v === "string" && /^(true|false|0|1)$/i.test(v))))
      return "boolean";
  }
  if (values.length > 0 && strs.length === values.length) {
    if ((/Id$/.test(name) || /__c$/.test(name)) && strs.every((s) => SF_ID.test(s))) return "reference";
    if (strs.every((s) => /^\d{4}-\d{2}-\d{2}$/.test(s))) return "date";
    if (strs.every((s) => /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(s))) return "datetime";
    if (strs.some((s) => s.length > 255)) return "textarea";
    return "string";
  }
  if (values.length > 0 && nums.length === values.length) return nums.every(Number.isInteger) ? "int" : "double";
  if (/INT/.test(decl)) return "int";
  if (/REAL|FLOA|DOUB|NUM|DEC/.test(decl)) return "double";
  return "string";
}

function relationshipName(field: string): string {
  if (field.endsWith("__c")) return `${field.slice(0, -3)}__r`;
  return field.replace(/Id$/, "");
}

function normalize(type: FieldType, v: Cell): Cell {
  if (v === null || v === undefined) return null;
  switch (type) {
    case "boolean":
      if (typeof v === "number") return v ? 1 : 0;
      return /^(true|1)$/i.test(String(v)) ? 1 : 0;
    case "id":
    case "reference":
      return typeof v === "string" && v.length === 15 && SF_ID.test(v) ? to18(v) : v;
    case "date": {
      const s = String(v);
      return /^\d{4}-\d{2}-\d{2}/.test(s) ? s.slice(0, 10) : s;
    }
    case "datetime": {
      const s = String(v);
      if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+0000$/.test(s)) return s;
      const iso = s.replace(" ", "T").replace(/([+-]\d{2})(\d{2})$/, "$1:$2");
      const ms = Date.parse(/[zZ]|[+-]\d{2}:\d{2}$/.test(iso) ? iso : `${iso}Z`);
      return Number.isFinite(ms) ? formatDateTime(ms) : s;
    }
    default:
      return v;
  }
}

/**
 * Read the objects of a released org database: one table per sObject, one column per field (the layout
 * CRMArena's `local_data/*.db` files use). Known objects keep the embedded definitions of the fields they have;
 * other tables and columns get types inferred from their values, and references their target from the Id prefix.
 */
export function readOrgObjects(db: Database): {
  objects: ObjectDef[];
  skipped: string[];
  /** `Object.Field` → the SQL expression that computes it from the file's columns. */
  computed: Map<string, string>;
} {
  const computed = new Map<string, string>();
  const tables = (
    db.exec(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)[0]
      ?.values ?? []
  ).map((r) => String(r[0]));
  const skipped: string[] = [];
  const raw: Array<{ table: string; cols: Array<{ name: string; decl: string }>; prefix: string }> = [];
  for (const table of tables) {
    const cols = (db.exec(`PRAGMA table_info(${qi(table)})`)[0]?.values ?? []).map((r) => ({
      name: String(r[1]),
      decl: String(r[2] ?? ""),
    }));
    const idCol = cols.find((c) => c.name.toLowerCase() === "id");
    if (!idCol) {
      skipped.push(`${table} (no Id column)`);
      continue;
    }
    idCol.name = "Id";
    const first = sample(db, table, "Id", 1)[0];
    const builtin = SCHEMA.object(table);
    raw.push({ table, cols, prefix: builtin?.prefix ?? (typeof first === "string" ? first.slice(0, 3) : "") });
  }
  const byPrefix = new Map(raw.filter((r) => r.prefix).map((r) => [r.prefix, SCHEMA.object(r.table)?.name ?? r.table]));
  const loaded = new Set(raw.map((r) => SCHEMA.object(r.table)?.name ?? r.table));
  const objects: ObjectDef[] = [];
  for (const { table, cols, prefix } of raw) {
    const builtin = SCHEMA.object(table);
    const fields: FieldDef[] = [];
    for (const c of cols) {
      const known = builtin ? SCHEMA.field(builtin, c.name) : undefined;
      if (known) {
        // a reference to an object this org lacks stays a plain Id column
        fields.push(known.to && !loaded.has(known.to) ? { name: known.name, type: known.type } : known);
        continue;
      }
      const values = sample(db, table, c.name);
      const type = inferType(c.name, c.decl, values);
      if (type === "reference") {
        const target = byPrefix.get(String(values[0]).slice(0, 3));
        fields.push(
          target ? { name: c.name, type, to: target, relationship: relationshipName(c.name) } : { name: c.name, type },
        );
      } else fields.push({ name: c.name, type });
    }
    const names = new Set(fields.map((x) => x.name));
    // the compound Name of a person object, when the file has only its parts
    if (
      builtin &&
      !names.has("Name") &&
      SCHEMA.field(builtin, "Name") &&
      names.has("FirstName") &&
      names.has("LastName")
    ) {
      fields.splice(1, 0, { name: "Name", type: "string" });
      names.add("Name");
      computed.set(`${builtin.name}.Name`, `TRIM(COALESCE("FirstName", '') || ' ' || COALESCE("LastName", ''))`);
    }
    const nameFields = builtin
      ? builtin.nameFields.filter((n) => names.has(n))
      : ["Name", "Subject", "Title"].filter((n) => names.has(n)).slice(0, 1);
    objects.push({
      name: builtin?.name ?? table,
      prefix,
      nameFields,
      readOnly: builtin?.readOnly ?? true,
      fields,
    });
  }
  return { objects, skipped, computed };
}

function latestDate(db: Database, objects: ObjectDef[]): string | undefined {
  let best: string | undefined;
  for (const o of objects) {
    if (!o.fields.some((x) => x.name === "CreatedDate")) continue;
    const v = db.exec(`SELECT MAX("CreatedDate") FROM ${qi(o.name)}`)[0]?.values[0]?.[0];
    if (typeof v === "string" && (!best || v > best)) best = v;
  }
  return best ? formatDate(Date.parse(best)) : undefined;
}

/**
 * Load a released org (a SQLite file in the benchmark's own layout) as the embedded org. Values are normalised to
 * the embedded forms (booleans 0/1, datetimes `YYYY-MM-DDThh:mm:ss.sss+0000`, 18-character Ids) so SOQL behaves
 * the same on it. The org's today is `today` when given, else the date of its latest CreatedDate.
 */
export async function loadOrgFile(path: string, options: { today?: string } = {}): Promise<Org> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (e) {
    throw new UsageError(`crm: cannot read the org file ${path}: ${(e as Error).message}`);
  }
  if (Buffer.from(bytes.subarray(0, 16)).toString("latin1") !== SQLITE_MAGIC) {
    throw new UsageError(`crm: ${path} is not a SQLite database (the org must be the benchmark's .db file)`);
  }
  const SQL = await loadSqlJs();
  const src = new SQL.Database(bytes);
  const out = new SQL.Database();
  try {
    const { objects, computed } = readOrgObjects(src);
    if (objects.length === 0) throw new UsageError(`crm: ${path} has no tables with an Id column`);
    out.exec(schemaDdl(objects));
    out.exec("BEGIN");
    for (const o of objects) {
      const cols = o.fields.map((x) => qi(x.name)).join(", ");
      const ins = out.prepare(
        `INSERT OR IGNORE INTO ${qi(o.name)} (${cols}) VALUES (${o.fields.map(() => "?").join(", ")})`,
      );
      const exprs = o.fields.map((x) => computed.get(`${o.name}.${x.name}`) ?? qi(x.name)).join(", ");
      const sel = src.prepare(`SELECT ${exprs} FROM ${qi(o.name)}`);
      try {
        while (sel.step()) {
          const row = sel.get() as Cell[];
          ins.run(row.map((v, i) => normalize(o.fields[i]!.type, v)) as Array<string | number | null>);
        }
      } finally {
        sel.free();
        ins.free();
      }
    }
    out.exec("COMMIT");
    out.exec("ANALYZE");
    const today = options.today ?? latestDate(out, objects) ?? formatDate(Date.now());
    return await Org.open(out.export(), today, buildSchema(objects));
  } finally {
    src.close();
    out.close();
  }
}
