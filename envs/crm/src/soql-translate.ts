import { dateLiteralRange, formatDate, formatDateTime, isValidDate, parseSoqlDateTime } from "./date-literals.js";
import { to18 } from "./ids.js";
import { type FieldDef, type FieldType, type ObjectDef, SCHEMA, type Schema } from "./schema.js";
import { SfError } from "./sf-error.js";
import type { Condition, Expr, FieldRef, SoqlQuery, Value } from "./soql-parser.js";

/** How one SQL result column becomes part of a REST record. */
export interface OutputColumn {
  /** Where the value goes in the record (`["Account", "Owner", "Name"]`, `["expr0"]`). */
  path: string[];
  /** The value's type, for decoding (booleans are stored as 0/1). */
  type: FieldType | "number";
}

/** A relationship in the result: null when the joined row's Id column is null. */
export interface JoinCheck {
  path: string[];
  column: number;
}

export interface TranslatedQuery {
  sql: string;
  params: Array<string | number | null>;
  object: string;
  countOnly: boolean;
  aggregate: boolean;
  columns: OutputColumn[];
  joinChecks: JoinCheck[];
}

const STRINGISH = new Set<FieldType>(["id", "string", "textarea", "picklist", "email", "phone", "reference"]);
const NUMERIC = new Set<FieldType>(["int", "double", "currency", "percent"]);
const q = (name: string) => `"${name}"`;

interface Resolved {
  sql: string;
  field?: FieldDef;
  type: FieldType | "number";
  /** Canonical output path (relationship names, then field name). */
  path: string[];
  aggregate: boolean;
  /** A SOQL rendering for error messages. */
  text: string;
}

/** Name resolution and joins for one query level. */
class Scope {
  readonly joins = new Map<string, { alias: string; obj: ObjectDef; relPath: string[] }>();
  readonly joinSql: string[] = [];
  constructor(
    readonly obj: ObjectDef,
    readonly alias: string,
    readonly schema: Schema = SCHEMA,
  ) {}

  resolveField(ref: FieldRef): Resolved {
    let path = ref.path;
    if (
      path.length > 1 &&
      path[0]!.toLowerCase() === this.obj.name.toLowerCase() &&
      !this.schema.relationship(this.obj, path[0]!)
    ) {
      path = path.slice(1);
    }
    let cur = this.obj;
    let alias = this.alias;
    const relPath: string[] = [];
    for (let i = 0; i < path.length - 1; i++) {
      const seg = path[i]!;
      const rel = this.schema.relationship(cur, seg);
      if (!rel) {
        throw new SfError(
          "INVALID_FIELD",
          `Didn't understand relationship '${seg}' in field path '${ref.path.join(".")}' on entity '${cur.name}'. If you are attempting to use a custom relationship, be sure to append the '__r' after the custom relationship name. Please reference your WSDL or the describe call for the appropriate names.`,
        );
      }
      relPath.push(rel.relationship!);
      const key = relPath.join(".");
      let join = this.joins.get(key);
      if (!join) {
        const target = this.schema.objects.get(rel.to!)!;
        join = { alias: `${this.alias}_${this.joins.size + 1}`, obj: target, relPath: [...relPath] };
        this.joins.set(key, join);
        this.joinSql.push(`LEFT JOIN ${q(target.name)} ${join.alias} ON ${join.alias}."Id" = ${alias}.${q(rel.name)}`);
      }
      cur = join.obj;
      alias = join.alias;
    }
    const last = path[path.length - 1]!;
    const field = this.schema.field(cur, last);
    if (!field) {
      throw new SfError(
        "INVALID_FIELD",
        `No such column '${last}' on entity '${cur.name}'. If you are attempting to use a custom field, be sure to append the '__c' after the custom field name. Please reference your WSDL or the describe call for the appropriate names.`,
      );
    }
    return {
      sql: `${alias}.${q(field.name)}`,
      field,
      type: field.type,
      path: [...relPath, field.name],
      aggregate: false,
      text: ref.path.join("."),
    };
  }
}

const DATE_FN_SQL: Record<string, (c: string) => string> = {
  CALENDAR_YEAR: (c) => `CAST(substr(${c}, 1, 4) AS INTEGER)`,
  CALENDAR_MONTH: (c) => `CAST(substr(${c}, 6, 2) AS INTEGER)`,
  CALENDAR_QUARTER: (c) => `((CAST(substr(${c}, 6, 2) AS INTEGER) + 2) / 3)`,
  DAY_IN_MONTH: (c) => `CAST(substr(${c}, 9, 2) AS INTEGER)`,
  DAY_ONLY: (c) => `substr(${c}, 1, 10)`,
  HOUR_IN_DAY: (c) => `CAST(substr(${c}, 12, 2) AS INTEGER)`,
};

export interface TranslateOptions {
  /** The org's today (YYYY-MM-DD), for date literals. */
  today: string;
  /** The org's objects (default: the embedded schema). */
  schema?: Schema;
  /** An extra condition ANDed before the WHERE clause, written against the top-level alias (SOSL's search). */
  prefilter?: (alias: string, obj: ObjectDef) => { sql: string; params: Array<string | number | null> } | undefined;
}

/** Translate a parsed SOQL query to one parameterised SQLite statement. Names are checked against the schema. */
export function translateSoql(query: SoqlQuery, options: TranslateOptions, aliasPrefix = "t"): TranslatedQuery {
  const schema = options.schema ?? SCHEMA;
  const obj = schema.object(query.from);
  if (!obj) {
    throw new SfError(
      "INVALID_TYPE",
      `sObject type '${query.from}' is not supported. If you are attempting to use a custom object, be sure to append the '__c' after the entity name. Please reference your WSDL or the describe call for the appropriate names.`,
    );
  }
  const scope = new Scope(obj, aliasPrefix, schema);
  const params: Array<string | number | null> = [];
  let subqueries = 0;

  const resolve = (e: Expr): Resolved => {
    if (e.kind === "field") return scope.resolveField(e);
    if (e.kind === "datefn") {
      const inner = scope.resolveField(e.arg);
      if (inner.type !== "date" && inner.type !== "datetime") {
        throw new SfError("MALFORMED_QUERY", `${e.fn}() needs a date or datetime field, not '${inner.text}'`);
      }
      return {
        sql: DATE_FN_SQL[e.fn]!(inner.sql),
        type: e.fn === "DAY_ONLY" ? "date" : "number",
        path: [],
        aggregate: false,
        text: `${e.fn}(${inner.text})`,
      };
    }
    if (!e.arg) return { sql: "COUNT(*)", type: "number", path: [], aggregate: true, text: "COUNT()" };
    const inner = resolve(e.arg);
    const fieldType = inner.type;
    if ((e.fn === "SUM" || e.fn === "AVG") && !NUMERIC.has(fieldType as FieldType) && fieldType !== "number") {
      throw new SfError("INVALID_FIELD", `field ${inner.text} does not support aggregate operator ${e.fn}`);
    }
    const sql =
      e.fn === "COUNT_DISTINCT" ? `COUNT(DISTINCT ${inner.sql})` : `${e.fn === "COUNT" ? "COUNT" : e.fn}(${inner.sql})`;
    const type = e.fn === "MIN" || e.fn === "MAX" ? fieldType : "number";
    return { sql, type, path: [], aggregate: true, text: `${e.fn}(${inner.text})` };
  };

  // SELECT list
  const items = [...query.select];
  if (query.fieldsMacro) {
    for (const fld of obj.fields) {
      const custom = fld.name.endsWith("__c");
      if (query.fieldsMacro === "ALL" || (query.fieldsMacro === "CUSTOM") === custom) {
        items.push({ expr: { kind: "field", path: [fld.name] } });
      }
    }
  }
  if (!query.countOnly && items.length === 0) throw new SfError("MALFORMED_QUERY", "SELECT needs at least one field");
  const resolvedSelect = items.map((it) => ({ item: it, r: resolve(it.expr) }));
  const groupBy = (query.groupBy ?? []).map((g) => {
    const r = resolve(g);
    if (r.aggregate) throw new SfError("MALFORMED_QUERY", `cannot GROUP BY an aggregate (${r.text})`);
    return r;
  });
  const aggregate = groupBy.length > 0 || resolvedSelect.some((s) => s.r.aggregate);
  if (aggregate && !query.countOnly) {
    const grouped = new Set(groupBy.map((g) => g.sql));
    for (const { r } of resolvedSelect) {
      if (!r.aggregate && !grouped.has(r.sql))
        throw new SfError("MALFORMED_QUERY", `Field must be grouped or aggregated: ${r.text}`);
    }
  }
  if (query.having && !aggregate)
    throw new SfError("MALFORMED_QUERY", "HAVING needs GROUP BY or an aggregate function");

  const columns: OutputColumn[] = [];
  const selectSql: string[] = [];
  let exprN = 0;
  const usedKeys = new Set<string>();
  for (const { item, r } of resolvedSelect) {
    selectSql.push(r.sql);
    let path: string[];
    if (item.alias) path = [item.alias];
    else if (r.aggregate || r.path.length === 0) path = [`expr${exprN++}`];
    else path = aggregate ? [r.path[r.path.length - 1]!] : r.path;
    const key = path.join(".");
    if (usedKeys.has(key) && (aggregate || item.alias)) throw new SfError("MALFORMED_QUERY", `duplicate alias: ${key}`);
    usedKeys.add(key);
    columns.push({ path, type: r.type });
  }

  // WHERE
  const cond = (c: Condition): string => {
    switch (c.kind) {
      case "and":
      case "or":
        return `(${c.items.map(cond).join(c.kind === "and" ? " AND " : " OR ")})`;
      case "not":
        return `(NOT ${cond(c.item)})`;
      case "cmp":
        return compare(resolve(c.left), c.op, c.value);
      case "like": {
        const r = resolve(c.left);
        if (c.value.kind !== "string")
          throw new SfError("MALFORMED_QUERY", `LIKE needs a quoted string pattern (field ${r.text})`);
        if (!STRINGISH.has(r.type as FieldType)) {
          throw new SfError("INVALID_FIELD", `invalid operator on field ${r.text}: LIKE works on text fields only`);
        }
        params.push(c.value.like);
        return `(${c.negated ? "NOT " : ""}${r.sql} LIKE ? ESCAPE '\\')`;
      }
      case "in": {
        const r = resolve(c.left);
        const parts = c.values.map((v) => {
          params.push(bindable(r, v));
          return "?";
        });
        return `(${r.sql} ${c.negated ? "NOT IN" : "IN"} (${parts.join(", ")}))`;
      }
      case "inQuery": {
        const r = resolve(c.left);
        if (r.type !== "id" && r.type !== "reference") {
          throw new SfError(
            "MALFORMED_QUERY",
            `semi-join subqueries need an Id or reference field on the left, not ${r.text}`,
          );
        }
        const inner = translateSoql(c.query, options, `${aliasPrefix}s${++subqueries}`);
        if (inner.columns.length !== 1 || inner.aggregate || inner.countOnly) {
          throw new SfError("MALFORMED_QUERY", "a semi-join subquery must select exactly one Id or reference field");
        }
        if (c.query.limit !== undefined || c.query.orderBy) {
          throw new SfError("MALFORMED_QUERY", "semi-join subqueries cannot have ORDER BY or LIMIT");
        }
        params.push(...inner.params);
        return `(${r.sql} ${c.negated ? "NOT IN" : "IN"} (${inner.sql}))`;
      }
    }
  };

  function typeError(r: Resolved, want: string): SfError {
    return new SfError("INVALID_FIELD", `value of filter criterion for field '${r.text}' must be of type ${want}`);
  }

  /** Convert a literal to the stored representation of the field it is compared with. */
  function bindable(r: Resolved, v: Value): string | number | null {
    const t = r.type;
    switch (v.kind) {
      case "null":
        return null;
      case "string":
        if (t === "date" || t === "datetime")
          throw typeError(r, `${t === "date" ? "date" : "dateTime"} and should not be enclosed in quotes`);
        if (t === "boolean") throw typeError(r, "boolean and should not be enclosed in quotes");
        if (NUMERIC.has(t as FieldType) || t === "number")
          throw typeError(r, "double and should not be enclosed in quotes");
        return t === "id" || t === "reference" ? to18(v.value) : v.value;
      case "number":
        if (!NUMERIC.has(t as FieldType) && t !== "number")
          throw typeError(r, t === "date" || t === "datetime" ? t : "string and should be enclosed in quotes");
        return v.value;
      case "boolean":
        if (t !== "boolean")
          throw typeError(r, NUMERIC.has(t as FieldType) ? "double" : "string and should be enclosed in quotes");
        return v.value ? 1 : 0;
      case "date":
        if (!isValidDate(v.value))
          throw new SfError(
            "MALFORMED_QUERY",
            `value of filter criterion for field '${r.text}' is not a valid date: ${v.value}`,
          );
        if (t === "date") return v.value;
        throw typeError(
          r,
          t === "datetime" ? "dateTime (e.g. 2025-01-31T00:00:00Z)" : "string and should be enclosed in quotes",
        );
      case "datetime": {
        const ms = parseSoqlDateTime(v.value);
        if (!Number.isFinite(ms))
          throw new SfError("MALFORMED_QUERY", `invalid dateTime value ${v.value} for field '${r.text}'`);
        if (t === "datetime") return formatDateTime(ms);
        throw typeError(
          r,
          t === "date" ? "date without a time (e.g. 2025-01-31)" : "string and should be enclosed in quotes",
        );
      }
      case "dateLiteral":
        throw new SfError("MALFORMED_QUERY", `date literal ${v.name} cannot be used in an IN list`);
    }
  }

  function compare(r: Resolved, op: string, v: Value): string {
    if (v.kind === "null") {
      if (op === "=") return `(${r.sql} IS NULL)`;
      if (op === "!=") return `(${r.sql} IS NOT NULL)`;
      throw new SfError("MALFORMED_QUERY", `null can only be compared with = or != (field ${r.text})`);
    }
    if (v.kind === "dateLiteral") {
      if (r.type !== "date" && r.type !== "datetime")
        throw typeError(r, "string; date literals work on date and datetime fields only");
      const range = dateLiteralRange(v.name, v.n, options.today);
      const fmt = r.type === "date" ? formatDate : formatDateTime;
      const s = fmt(range.start);
      const e = fmt(range.end);
      switch (op) {
        case "=":
          params.push(s, e);
          return `(${r.sql} >= ? AND ${r.sql} < ?)`;
        case "!=":
          params.push(s, e);
          return `(${r.sql} < ? OR ${r.sql} >= ?)`;
        case "<":
          params.push(s);
          return `(${r.sql} < ?)`;
        case "<=":
          params.push(e);
          return `(${r.sql} < ?)`;
        case ">":
          params.push(e);
          return `(${r.sql} >= ?)`;
        default:
          params.push(s);
          return `(${r.sql} >= ?)`;
      }
    }
    params.push(bindable(r, v));
    return `(${r.sql} ${op} ?)`;
  }

  const pre = aliasPrefix === "t" ? options.prefilter?.(aliasPrefix, obj) : undefined;
  if (pre) params.push(...pre.params);
  const userWhere = query.where ? cond(query.where) : undefined;
  const whereSql = pre && userWhere ? `(${pre.sql}) AND ${userWhere}` : (pre?.sql ?? userWhere);
  const havingSql = query.having ? cond(query.having) : undefined;
  const orderSql = (query.orderBy ?? []).map((o) => {
    const r = resolve(o.expr);
    if (aggregate && !r.aggregate && !groupBy.some((g) => g.sql === r.sql)) {
      throw new SfError("MALFORMED_QUERY", `Ordered field must be grouped or aggregated: ${r.text}`);
    }
    return `${r.sql} ${o.dir}${o.nulls ? ` NULLS ${o.nulls}` : ""}`;
  });

  const joinChecks: JoinCheck[] = [];
  if (!aggregate && !query.countOnly) {
    for (const j of scope.joins.values()) {
      if (!columns.some((c) => c.path.length > j.relPath.length && j.relPath.every((p, i) => c.path[i] === p)))
        continue;
      joinChecks.push({ path: j.relPath, column: selectSql.length });
      selectSql.push(`${j.alias}."Id"`);
    }
  }

  const from = [`${q(obj.name)} ${aliasPrefix}`, ...scope.joinSql].join(" ");
  let sql: string;
  if (query.countOnly) {
    const inner = `SELECT 1 FROM ${from}${whereSql ? ` WHERE ${whereSql}` : ""}${query.limit !== undefined ? ` LIMIT ${query.limit}` : ""}${query.offset ? ` OFFSET ${query.offset}` : ""}`;
    sql =
      query.limit !== undefined || query.offset
        ? `SELECT COUNT(*) FROM (${inner})`
        : `SELECT COUNT(*) FROM ${from}${whereSql ? ` WHERE ${whereSql}` : ""}`;
  } else {
    sql = `SELECT ${selectSql.join(", ")} FROM ${from}`;
    if (whereSql) sql += ` WHERE ${whereSql}`;
    if (groupBy.length) sql += ` GROUP BY ${groupBy.map((g) => g.sql).join(", ")}`;
    if (havingSql) sql += ` HAVING ${havingSql}`;
    if (orderSql.length) sql += ` ORDER BY ${orderSql.join(", ")}`;
    if (query.limit !== undefined) sql += ` LIMIT ${query.limit}`;
    if (query.offset !== undefined) sql += `${query.limit === undefined ? " LIMIT -1" : ""} OFFSET ${query.offset}`;
  }
  return { sql, params, object: obj.name, countOnly: query.countOnly, aggregate, columns, joinChecks };
}
