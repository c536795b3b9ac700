/** Values of the formula evaluator: scalars, 2-D arrays, and references (kept lazy for INDEX/OFFSET/ROW/...). */

export class XlError {
  constructor(readonly code: string) {}
  toString(): string {
    return this.code;
  }
}

export const ERR = {
  div0: new XlError("#DIV/0!"),
  na: new XlError("#N/A"),
  name: new XlError("#NAME?"),
  num: new XlError("#NUM!"),
  ref: new XlError("#REF!"),
  value: new XlError("#VALUE!"),
  null: new XlError("#NULL!"),
  calc: new XlError("#CALC!"),
  spill: new XlError("#SPILL!"),
};

export function errorOf(code: string): XlError {
  for (const e of Object.values(ERR)) if (e.code === code) return e;
  return new XlError(code);
}

/** null = a blank cell (or a missing argument). */
export type Scalar = number | string | boolean | null | XlError;

export class Matrix {
  constructor(readonly data: Scalar[][]) {}
  get rows(): number {
    return this.data.length;
  }
  get cols(): number {
    return this.data[0]?.length ?? 0;
  }
  get(r: number, c: number): Scalar {
    // a 1-row or 1-column array broadcasts along the other axis
    const row = this.data[this.rows === 1 ? 0 : r];
    if (!row) return ERR.na;
    const v = row[this.cols === 1 ? 0 : c];
    return v === undefined ? ERR.na : v;
  }
  static of(v: Scalar): Matrix {
    return new Matrix([[v]]);
  }
  flat(): Scalar[] {
    const out: Scalar[] = [];
    for (const r of this.data) for (const v of r) out.push(v);
    return out;
  }
  map(f: (v: Scalar) => Scalar): Matrix {
    return new Matrix(this.data.map((r) => r.map(f)));
  }
}

/** A rectangular reference into a sheet (1-based, inclusive). */
export class Ref {
  constructor(
    readonly sheet: string,
    readonly r1: number,
    readonly c1: number,
    readonly r2: number,
    readonly c2: number,
  ) {}
  get rows(): number {
    return this.r2 - this.r1 + 1;
  }
  get cols(): number {
    return this.c2 - this.c1 + 1;
  }
  get single(): boolean {
    return this.r1 === this.r2 && this.c1 === this.c2;
  }
}

export type Value = Scalar | Matrix | Ref;

export const isErr = (v: unknown): v is XlError => v instanceof XlError;

/** Thrown when a formula uses something the engine does not implement: the cell cannot be computed faithfully. */
export class UnsupportedFormula extends Error {
  override name = "UnsupportedFormula";
  constructor(readonly what: string) {
    super(`unsupported: ${what}`);
  }
}

/** Thrown for a formula the parser cannot read. */
export class FormulaSyntaxError extends Error {
  override name = "FormulaSyntaxError";
}

/** A reference too large to read even after shrinking it to its data: the recalculation stops (its budget). */
export class RangeCapError extends Error {
  override name = "RangeCapError";
}
