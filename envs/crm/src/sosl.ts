import type { Database } from "sql.js";
import { runCompiled } from "./query-engine.js";
import { type FieldType, type ObjectDef, SCHEMA, type Schema } from "./schema.js";
import { SfError } from "./sf-error.js";
import { TokenStream, tokenize } from "./soql-lexer.js";
import { type OrderItem, parseCondition, type SelectItem, type SoqlQuery } from "./soql-parser.js";
import { translateSoql } from "./soql-translate.js";

export type SearchScope = "ALL" | "NAME" | "EMAIL" | "PHONE";

export interface SoslReturning {
  object: string;
  query: SoqlQuery;
}

export interface SoslQuery {
  /** OR of AND groups of search terms (`*`/`?` wildcards kept). */
  groups: Array<Array<{ term: string; negated: boolean }>>;
  scope: SearchScope;
  returning: SoslReturning[];
  limit?: number;
}

/** The REST search response: `searchRecords`, each with `attributes: {type}` (records of several objects mix). */
export type SearchResult = {
  searchRecords: Array<Record<string, unknown>>;
  /** Only when the result was cut. */
  message?: string;
};

const SEARCHABLE: Record<SearchScope, Set<FieldType>> = {
  ALL: new Set(["string", "textarea", "email", "phone"]),
  NAME: new Set(),
  EMAIL: new Set(["email"]),
  PHONE: new Set(["phone"]),
};

function searchFields(obj: ObjectDef, scope: SearchScope): string[] {
  if (scope === "NAME") return obj.nameFields;
  return obj.fields.filter((f) => SEARCHABLE[scope].has(f.type)).map((f) => f.name);
}

/** Split a search term into OR groups of (negated) words and "quoted phrases". */
export function parseSearchTerm(raw: string): SoslQuery["groups"] {
  const text = raw.replace(/[()]/g, " ");
  const tokens: string[] = [];
  const re = /"((?:\\.|[^"\\])*)"|(\S+)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) tokens.push(m[1] !== undefined ? `"${m[1]}` : m[2]!);
  const groups: SoslQuery["groups"] = [[]];
  let negate = false;
  for (const tok of tokens) {
    const u = tok.toUpperCase();
    if (u === "OR") {
      groups.push([]);
      continue;
    }
    if (u === "AND") continue;
    if (u === "NOT" || u === "AND NOT") {
      negate = true;
      continue;
    }
    const term = (tok.startsWith('"') ? tok.slice(1) : tok).replace(/\\(.)/g, "$1").trim();
    if (!term) continue;
    groups[groups.length - 1]!.push({ term, negated: negate });
    negate = false;
  }
  const nonEmpty = groups.filter((g) => g.some((t) => !t.negated));
  const longest = Math.max(0, ...nonEmpty.flat().map((t) => t.term.replace(/[*?]/g, "").length));
  if (nonEmpty.length === 0 || longest < 2) {
    throw new SfError("MALFORMED_SEARCH", "search term must be longer than one character");
  }
  return nonEmpty;
}

function likePattern(term: string): string {
  const escaped = term
    .replace(/[\\%_]/g, (c) => `\\${c}`)
    .replace(/\*/g, "%")
    .replace(/\?/g, "_");
  return `%${escaped}%`;
}

/** Parse a SOSL search: `FIND {term} [IN ALL|NAME|EMAIL|PHONE FIELDS] [RETURNING Obj(fields …), …] [LIMIT n]`. */
export function parseSosl(text: string): SoslQuery {
  const m = /^\s*FIND\s*(?:\{((?:\\.|[^}\\])*)\}|'((?:\\.|[^'\\])*)')/i.exec(text);
  if (!m) throw new SfError("MALFORMED_SEARCH", "a SOSL search starts with FIND {term}");
  const groups = parseSearchTerm(m[1] ?? m[2] ?? "");
  const ts = new TokenStream(tokenize(text.slice(m[0].length), "MALFORMED_SEARCH"), "MALFORMED_SEARCH");
  const out: SoslQuery = { groups, scope: "ALL", returning: [] };
  if (ts.acceptKw("IN")) {
    const s = ts.ident("ALL, NAME, EMAIL or PHONE").toUpperCase();
    if (s !== "ALL" && s !== "NAME" && s !== "EMAIL" && s !== "PHONE") {
      throw new SfError("MALFORMED_SEARCH", `unsupported search scope IN ${s} FIELDS (use ALL, NAME, EMAIL or PHONE)`);
    }
    ts.expectKw("FIELDS");
    out.scope = s;
  }
  if (ts.acceptKw("RETURNING")) {
    do {
      const objName = ts.ident("an object name");
      const query: SoqlQuery = { select: [], countOnly: false, from: objName };
      if (ts.acceptPunct("(")) {
        const select: SelectItem[] = [];
        do {
          const path = [ts.ident("a field name")];
          while (ts.acceptPunct(".")) path.push(ts.ident());
          select.push({ expr: { kind: "field", path } });
        } while (ts.acceptPunct(","));
        query.select = select;
        if (ts.acceptKw("WHERE")) query.where = parseCondition(ts);
        if (ts.acceptKw("ORDER")) {
          ts.expectKw("BY");
          const order: OrderItem[] = [];
          do {
            const path = [ts.ident("a field name")];
            while (ts.acceptPunct(".")) path.push(ts.ident());
            let dir: "ASC" | "DESC" = "ASC";
            if (ts.acceptKw("DESC")) dir = "DESC";
            else ts.acceptKw("ASC");
            order.push({ expr: { kind: "field", path }, dir });
          } while (ts.acceptPunct(","));
          query.orderBy = order;
        }
        if (ts.acceptKw("LIMIT")) query.limit = Number(expectNumber(ts));
        ts.expectPunct(")");
      } else {
        query.select = [{ expr: { kind: "field", path: ["Id"] } }];
      }
      out.returning.push({ object: objName, query });
    } while (ts.acceptPunct(","));
  }
  if (ts.acceptKw("LIMIT")) out.limit = Number(expectNumber(ts));
  if (ts.peek().kind !== "eof") throw ts.unexpected();
  return out;
}

function expectNumber(ts: TokenStream): string {
  const t = ts.next();
  if (t.kind !== "number")
    throw new SfError("MALFORMED_SEARCH", `unexpected token: ${t.value || "<EOF>"} (LIMIT needs a number)`);
  return t.value;
}

/** Run a SOSL search over the org. */
export function runSosl(
  db: Database,
  text: string,
  today: string,
  maxRecords = 200,
  schema: Schema = SCHEMA,
): SearchResult {
  if (typeof text !== "string" || !text.trim()) throw new SfError("MALFORMED_SEARCH", "empty search");
  const sosl = parseSosl(text);
  const returning: SoslReturning[] = sosl.returning.length
    ? sosl.returning
    : [...schema.objects.values()]
        .filter((o) => searchFields(o, sosl.scope).length > 0)
        .map((o) => ({
          object: o.name,
          query: { select: [{ expr: { kind: "field", path: ["Id"] } }], countOnly: false, from: o.name } as SoqlQuery,
        }));
  const limit = Math.min(sosl.limit ?? 2000, maxRecords);
  const out: Array<Record<string, unknown>> = [];
  let total = 0;
  for (const r of returning) {
    const obj = schema.object(r.object);
    if (!obj) throw new SfError("INVALID_TYPE", `sObject type '${r.object}' is not supported.`);
    const fields = searchFields(obj, sosl.scope);
    if (fields.length === 0) continue;
    const t = translateSoql(r.query, {
      today,
      schema,
      prefilter: (alias) => {
        const params: string[] = [];
        const ors = sosl.groups.map((g) => {
          const ands = g.map((term) => {
            const pat = likePattern(term.term);
            const anyField = fields.map((f) => {
              params.push(pat);
              return `${alias}."${f}" LIKE ? ESCAPE '\\'`;
            });
            return `${term.negated ? "NOT " : ""}(${anyField.join(" OR ")})`;
          });
          return `(${ands.join(" AND ")})`;
        });
        return { sql: ors.join(" OR "), params };
      },
    });
    const res = runCompiled(db, t, { maxRecords: Math.max(0, limit - out.length), maxChars: 1e12 });
    total += res.totalSize;
    for (const rec of res.records) out.push({ attributes: { type: obj.name }, ...rec });
  }
  const result: SearchResult = { searchRecords: out };
  if (total > out.length) {
    result.message = `Search truncated: ${out.length} of ${total} matching records shown. Use a more specific term or RETURNING Obj(fields LIMIT n).`;
  }
  return result;
}
