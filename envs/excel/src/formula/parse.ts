/**
 * An Excel formula parser (A1 syntax, as formulas are stored in xlsx): a hand-written Pratt parser producing a
 * small AST. Function names keep their stored prefix stripped (`_xlfn.`, `_xlws.`), so `_xlfn.IFS` is `IFS`.
 */
import { FormulaSyntaxError } from "./values.js";

export const MAX_ROW = 1048576;
export const MAX_COL = 16384;

export type Node =
  | { t: "num"; v: number }
  | { t: "str"; v: string }
  | { t: "bool"; v: boolean }
  | { t: "err"; v: string }
  | { t: "missing" }
  | { t: "ref"; sheet?: string; r1: number; c1: number; r2: number; c2: number }
  | { t: "name"; name: string; sheet?: string }
  | { t: "fn"; name: string; args: Node[] }
  | { t: "un"; op: "-" | "+"; a: Node }
  | { t: "pct"; a: Node }
  | { t: "bin"; op: string; a: Node; b: Node }
  | { t: "arr"; rows: Node[][] }
  /** A structured reference: `Table1[Col]`, `Table1[[#This Row],[Col]]`, `Table1[[#Headers],[A]:[B]]`, `Table1[#All]`. */
  | { t: "table"; table: string; items: string[]; from?: string; to?: string };

const colNum = (s: string) => {
  let n = 0;
  for (const ch of s.toUpperCase()) n = n * 26 + ch.charCodeAt(0) - 64;
  return n;
};

const BIN: Record<string, number> = {
  "=": 10,
  "<>": 10,
  "<": 10,
  ">": 10,
  "<=": 10,
  ">=": 10,
  "&": 20,
  "+": 30,
  "-": 30,
  "*": 40,
  "/": 40,
  "^": 50,
  ":": 90,
};

const ERRORS = /^#(?:NULL!|DIV\/0!|VALUE!|REF!|NAME\?|NUM!|N\/A|GETTING_DATA|SPILL!|CALC!)/i;
const CELL = /^\$?([A-Za-z]{1,3})\$?([0-9]+)(?![\w(.!])/;
const COLS = /^\$?([A-Za-z]{1,3}):\$?([A-Za-z]{1,3})(?![\w(.!])/;
const ROWS = /^\$?([0-9]+):\$?([0-9]+)(?![\w(.!])/;
const IDENT = /^[A-Za-z_\\\u00a0-\uffff][\w.\u00a0-\uffff]*/;
const NUMBER = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/;
const QSHEET = /^'((?:[^']|'')+)'!/;
const SHEET = /^([A-Za-z0-9_.\u00a0-\uffff]+)!/;

class Parser {
  i = 0;
  constructor(readonly s: string) {}

  ws(): void {
    while (this.i < this.s.length && /[ \t\r\n\u00a0]/.test(this.s[this.i]!)) this.i++;
  }
  rest(): string {
    return this.s.slice(this.i);
  }
  fail(msg: string): never {
    throw new FormulaSyntaxError(`${msg} at position ${this.i} of ${JSON.stringify(this.s)}`);
  }

  expr(minBp = 0): Node {
    let left = this.prefix();
    for (;;) {
      this.ws();
      const r = this.rest();
      if (r.startsWith("%")) {
        this.i++;
        left = { t: "pct", a: left };
        continue;
      }
      const op = /^(<>|<=|>=|[=<>&+\-*/^:])/.exec(r)?.[1];
      if (!op) break;
      const bp = BIN[op]!;
      if (bp <= minBp) break;
      this.i += op.length;
      const right = this.expr(bp); // left-associative
      left = { t: "bin", op, a: left, b: right };
    }
    return left;
  }

  prefix(): Node {
    this.ws();
    const c = this.s[this.i];
    if (c === "-" || c === "+") {
      this.i++;
      const a = this.expr(60);
      return { t: "un", op: c, a };
    }
    return this.primary();
  }

  args(close: string): Node[] {
    const out: Node[] = [];
    this.ws();
    if (this.s[this.i] === close) {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      const c = this.s[this.i];
      if (c === "," || c === close) out.push({ t: "missing" });
      else out.push(this.expr());
      this.ws();
      const d = this.s[this.i];
      if (d === ",") {
        this.i++;
        continue;
      }
      if (d === close) {
        this.i++;
        return out;
      }
      this.fail(`expected "," or "${close}"`);
    }
  }

  area(sheet: string | undefined): Node | undefined {
    const r = this.rest();
    let m = COLS.exec(r);
    if (m) {
      this.i += m[0].length;
      const a = colNum(m[1]!);
      const b = colNum(m[2]!);
      return { t: "ref", sheet, r1: 1, r2: MAX_ROW, c1: Math.min(a, b), c2: Math.max(a, b) };
    }
    m = ROWS.exec(r);
    if (m) {
      this.i += m[0].length;
      const a = Number(m[1]);
      const b = Number(m[2]);
      return { t: "ref", sheet, r1: Math.min(a, b), r2: Math.max(a, b), c1: 1, c2: MAX_COL };
    }
    m = CELL.exec(r);
    if (m && colNum(m[1]!) <= MAX_COL) {
      this.i += m[0].length;
      const r1 = Number(m[2]);
      const c1 = colNum(m[1]!);
      const save = this.i;
      if (this.s[this.i] === ":") {
        this.i++;
        const m2 = CELL.exec(this.rest());
        if (m2) {
          this.i += m2[0].length;
          const r2 = Number(m2[2]);
          const c2 = colNum(m2[1]!);
          return {
            t: "ref",
            sheet,
            r1: Math.min(r1, r2),
            r2: Math.max(r1, r2),
            c1: Math.min(c1, c2),
            c2: Math.max(c1, c2),
          };
        }
        this.i = save;
      }
      return { t: "ref", sheet, r1, c1, r2: r1, c2: c1 };
    }
    return undefined;
  }

  /** The bracketed text at the cursor (nested brackets kept, `'` escapes the next character). */
  bracket(): string {
    let depth = 0;
    let out = "";
    for (; this.i < this.s.length; this.i++) {
      const ch = this.s[this.i]!;
      if (ch === "'" && this.i + 1 < this.s.length) {
        out += ch + this.s[++this.i];
        continue;
      }
      if (ch === "[") depth++;
      if (ch === "]") depth--;
      out += ch;
      if (depth === 0) {
        this.i++;
        return out.slice(1, -1);
      }
    }
    this.fail("unterminated structured reference");
  }

  structured(table: string): Node {
    const body = this.bracket();
    const unquote = (x: string) => x.replace(/'(.)/g, "$1");
    if (!body.startsWith("[")) {
      if (body.startsWith("#")) return { t: "table", table, items: [body.toUpperCase()] };
      return {
        t: "table",
        table,
        items: [],
        ...(body ? { from: unquote(body.trim()), to: unquote(body.trim()) } : {}),
      };
    }
    // a list: [#Item],[Col] or [Col1]:[Col2]
    const parts = body.match(/\[(?:[^\]']|'.)*\]|:|,/g) ?? [];
    const items: string[] = [];
    const cols: string[] = [];
    let range = false;
    for (const p of parts) {
      if (p === ",") continue;
      if (p === ":") {
        range = true;
        continue;
      }
      const inner = unquote(p.slice(1, -1).trim());
      if (inner.startsWith("#")) items.push(inner.toUpperCase());
      else cols.push(inner);
    }
    if (cols.length > 2 || (cols.length === 2 && !range)) this.fail("unsupported structured reference");
    return { t: "table", table, items, ...(cols.length ? { from: cols[0], to: cols[cols.length - 1] } : {}) };
  }

  primary(): Node {
    this.ws();
    const r = this.rest();
    const c = r[0];
    if (c === undefined) this.fail("unexpected end of formula");
    if (c === "(") {
      this.i++;
      const e = this.expr();
      this.ws();
      if (this.s[this.i] === ",") this.fail("reference unions are not supported");
      if (this.s[this.i] !== ")") this.fail('expected ")"');
      this.i++;
      return e;
    }
    if (c === "{") {
      this.i++;
      const rows: Node[][] = [[]];
      for (;;) {
        this.ws();
        rows[rows.length - 1]!.push(this.prefix());
        this.ws();
        const d = this.s[this.i];
        this.i++;
        if (d === ",") continue;
        if (d === ";") {
          rows.push([]);
          continue;
        }
        if (d === "}") break;
        this.fail('expected "," ";" or "}" in an array constant');
      }
      return { t: "arr", rows };
    }
    if (c === '"') {
      let j = this.i + 1;
      let out = "";
      for (;;) {
        if (j >= this.s.length) this.fail("unterminated string");
        if (this.s[j] === '"') {
          if (this.s[j + 1] === '"') {
            out += '"';
            j += 2;
            continue;
          }
          break;
        }
        out += this.s[j];
        j++;
      }
      this.i = j + 1;
      return { t: "str", v: out };
    }
    if (c === "#") {
      const m = ERRORS.exec(r);
      if (!m) this.fail("unknown error literal");
      this.i += m[0].length;
      return { t: "err", v: m[0].toUpperCase() };
    }
    if (c === "[") this.fail("external or structured references are not supported");
    // sheet-qualified reference
    let sheet: string | undefined;
    let m = QSHEET.exec(r);
    if (m) sheet = m[1]!.replace(/''/g, "'");
    else if ((m = SHEET.exec(r))) sheet = m[1]!;
    if (sheet !== undefined && m) {
      this.i += m[0].length;
      const a = this.area(sheet);
      if (a) return a;
      const id = IDENT.exec(this.rest());
      if (id) {
        this.i += id[0].length;
        return { t: "name", name: id[0].toUpperCase(), sheet };
      }
      if (this.rest().startsWith("#REF!")) {
        this.i += 5;
        return { t: "err", v: "#REF!" };
      }
      this.fail("expected a reference after the sheet name");
    }
    const a = this.area(undefined);
    if (a) return a;
    const num = NUMBER.exec(r);
    if (num) {
      this.i += num[0].length;
      return { t: "num", v: Number(num[0]) };
    }
    const id = IDENT.exec(r);
    if (id) {
      this.i += id[0].length;
      this.ws();
      if (this.s[this.i] === "(") {
        this.i++;
        const name = id[0].toUpperCase().replace(/^_XLFN\._XLWS\.|^_XLFN\.|^_XLWS\./, "");
        return { t: "fn", name, args: this.args(")") };
      }
      if (this.s[this.i] === "[") return this.structured(id[0]);
      const up = id[0].toUpperCase();
      if (up === "TRUE" || up === "FALSE") return { t: "bool", v: up === "TRUE" };
      return { t: "name", name: up.replace(/^_XLPM\./, "") };
    }
    this.fail(`unexpected ${JSON.stringify(c)}`);
  }
}

const cache = new Map<string, Node>();

/** Parse a formula (with or without its leading "="). Results are cached per formula text. */
export function parseFormula(formula: string): Node {
  const text = formula.startsWith("=") ? formula.slice(1) : formula;
  let n = cache.get(text);
  if (!n) {
    const p = new Parser(text);
    n = p.expr();
    p.ws();
    if (p.i < text.length) p.fail("unexpected text");
    if (cache.size > 50_000) cache.clear();
    cache.set(text, n);
  }
  return n;
}

/** The static references of a formula (for dependency ordering). */
export function refsOf(node: Node, out: Array<Extract<Node, { t: "ref" }>> = []): typeof out {
  switch (node.t) {
    case "ref":
      out.push(node);
      break;
    case "fn":
      for (const a of node.args) refsOf(a, out);
      break;
    case "un":
    case "pct":
      refsOf(node.a, out);
      break;
    case "bin":
      refsOf(node.a, out);
      refsOf(node.b, out);
      break;
    case "arr":
      for (const r of node.rows) for (const a of r) refsOf(a, out);
      break;
  }
  return out;
}
