import { formatDateTime, isValidDate, parseSoqlDateTime } from "./date-literals.js";
import { makeId, to18 } from "./ids.js";
import type { OrgSession } from "./org.js";
import type { FieldDef, ObjectDef, Schema } from "./schema.js";
import { SfError } from "./sf-error.js";

const NOT_WRITABLE = new Set(["Id", "CreatedDate"]);

function objectFor(schema: Schema, name: string, op: "create" | "update"): ObjectDef {
  const obj = schema.object(name);
  if (!obj) throw new SfError("INVALID_TYPE", `sObject type '${name}' is not supported.`);
  if (obj.readOnly) {
    throw new SfError(
      "ENTITY_IS_READ_ONLY",
      `entity type ${obj.name} is read-only in this org and does not support ${op}`,
    );
  }
  return obj;
}

function coerce(obj: ObjectDef, field: FieldDef, value: unknown, session: OrgSession): string | number | null {
  const bad = (want: string) =>
    new SfError("INVALID_FIELD", `${obj.name}.${field.name}: expected ${want}, got ${JSON.stringify(value)}`);
  if (value === null) return null;
  switch (field.type) {
    case "boolean":
      if (typeof value !== "boolean") throw bad("true or false");
      return value ? 1 : 0;
    case "int":
    case "double":
    case "currency":
    case "percent":
      if (typeof value !== "number" || !Number.isFinite(value)) throw bad("a number");
      return field.type === "int" ? Math.trunc(value) : value;
    case "date":
      if (typeof value !== "string" || !isValidDate(value)) throw bad("a date YYYY-MM-DD");
      return value;
    case "datetime": {
      const ms = typeof value === "string" ? parseSoqlDateTime(value) : Number.NaN;
      if (!Number.isFinite(ms)) throw bad("a datetime such as 2025-01-31T10:00:00Z");
      return formatDateTime(ms);
    }
    case "reference": {
      if (typeof value !== "string") throw bad("a record Id");
      const id = to18(value);
      if (!field.to) return id;
      const found = session.reader.exec(`SELECT 1 FROM "${field.to}" WHERE "Id" = ?`, [id]);
      if (!found.length)
        throw new SfError("INVALID_FIELD", `${obj.name}.${field.name}: no ${field.to} record with Id ${value}`);
      return id;
    }
    default:
      if (typeof value !== "string") throw bad("a string");
      if (value.length > 32_000) throw bad("at most 32,000 characters");
      return value;
  }
}

function columns(
  obj: ObjectDef,
  fields: Record<string, unknown>,
  session: OrgSession,
): Array<[FieldDef, string | number | null]> {
  const out: Array<[FieldDef, string | number | null]> = [];
  for (const [name, value] of Object.entries(fields)) {
    const field = session.schema.field(obj, name);
    if (!field) throw new SfError("INVALID_FIELD", `No such column '${name}' on sobject of type ${obj.name}`);
    if (NOT_WRITABLE.has(field.name)) {
      throw new SfError(
        "INVALID_FIELD_FOR_INSERT_UPDATE",
        `Unable to create/update fields: ${field.name}. Please check the security settings of this field.`,
      );
    }
    out.push([field, coerce(obj, field, value, session)]);
  }
  return out;
}

/** Update one record in the rollout's overlay (only this rollout sees it). Read-only objects are refused. */
export function updateRecord(
  session: OrgSession,
  objectName: string,
  id: string,
  fields: Record<string, unknown>,
): { id: string; success: true } {
  const obj = objectFor(session.schema, objectName, "update");
  const recId = to18(id);
  const cols = columns(obj, fields, session);
  if (cols.length === 0) throw new SfError("INVALID_FIELD", "no fields to update");
  if (!session.reader.exec(`SELECT 1 FROM "${obj.name}" WHERE "Id" = ?`, [recId]).length) {
    throw new SfError("NOT_FOUND", `The requested resource does not exist: ${obj.name} ${id}`);
  }
  const db = session.writer();
  db.run(`UPDATE "${obj.name}" SET ${cols.map(([f]) => `"${f.name}" = ?`).join(", ")} WHERE "Id" = ?`, [
    ...cols.map(([, v]) => v),
    recId,
  ]);
  session.changed(obj.name, recId);
  session.writes++;
  return { id: recId, success: true };
}

/** Create a record in the rollout's overlay. Read-only objects are refused. */
export function createRecord(
  session: OrgSession,
  objectName: string,
  fields: Record<string, unknown>,
): { id: string; success: true } {
  const obj = objectFor(session.schema, objectName, "create");
  const cols = columns(obj, fields, session);
  const db = session.writer();
  const max = db.exec(`SELECT COUNT(*) FROM "${obj.name}"`)[0]?.values[0]?.[0] ?? 0;
  let n = Number(max) + 1_000_000;
  let id = makeId(obj.prefix, n);
  while (db.exec(`SELECT 1 FROM "${obj.name}" WHERE "Id" = ?`, [id]).length) id = makeId(obj.prefix, ++n);
  const all: Array<[string, string | number | null]> = [
    ["Id", id],
    ["CreatedDate", formatDateTime(Date.parse(`${session.today}T12:00:00Z`))],
    ...cols.map(([f, v]): [string, string | number | null] => [f.name, v]),
  ];
  db.run(
    `INSERT INTO "${obj.name}" (${all.map(([k]) => `"${k}"`).join(", ")}) VALUES (${all.map(() => "?").join(", ")})`,
    all.map(([, v]) => v),
  );
  session.changed(obj.name, id);
  session.writes++;
  return { id, success: true };
}
