/** Helpers shared by the function tables. */
import { toNum } from "./coerce.js";
import type { Evaluator } from "./evaluate.js";
import type { FnDef } from "./function-types.js";
import { ERR, Matrix, Ref, type Scalar, type Value, XlError } from "./values.js";

/** Every value of an argument: a reference's cells, an array's elements, or the scalar itself. */
export function flat(v: Value, ev: Evaluator): Scalar[] {
  if (v instanceof Ref || v instanceof Matrix) return ev.toMatrix(v).flat();
  return [v];
}

/**
 * The numbers of aggregate arguments (SUM, AVERAGE, MAX …): in references and arrays only numbers count (text,
 * logicals and blanks are skipped); a value typed directly is converted (text that spells a number counts).
 * Errors anywhere propagate.
 */
export function numbers(args: Value[], ev: Evaluator, opts: { a?: boolean } = {}): number[] {
  const out: number[] = [];
  for (const v of args) {
    if (v instanceof Ref || v instanceof Matrix) {
      for (const x of ev.toMatrix(v).flat()) {
        if (typeof x === "number") out.push(x);
        else if (x instanceof XlError) throw x;
        else if (opts.a && typeof x === "boolean") out.push(x ? 1 : 0);
        else if (opts.a && typeof x === "string") out.push(0);
      }
    } else if (v !== null || opts.a) {
      out.push(toNum(v));
    }
  }
  return out;
}

/** Cell `i, j` of a range or array of the given shape's area, whatever its own shape (SUMIF's sum_range). */
export function at(v: Value, ev: Evaluator, i: number, j: number): Scalar {
  if (v instanceof Ref) {
    const r = v.r1 + i;
    const c = v.c1 + j;
    return ev.host.cell(v.sheet, r, c);
  }
  if (v instanceof Matrix) return i < v.rows && j < v.cols ? v.data[i]![j]! : null;
  return i === 0 && j === 0 ? v : null;
}

/** The shape of an argument (references clipped to the used area). */
export function shape(v: Value, ev: Evaluator): { rows: number; cols: number } {
  if (v instanceof Ref) {
    const r = ev.clip(v);
    return { rows: r.rows, cols: r.cols };
  }
  if (v instanceof Matrix) return { rows: v.rows, cols: v.cols };
  return { rows: 1, cols: 1 };
}

export const num = (v: Value, ev: Evaluator): number => toNum(ev.scalar(v));

export const optNum = (v: Value | undefined, ev: Evaluator, dflt: number): number =>
  v === undefined || v === null ? dflt : toNum(ev.scalar(v));

export function int(v: Value, ev: Evaluator): number {
  return Math.trunc(num(v, ev));
}

export function check(n: number): number {
  if (!Number.isFinite(n)) throw ERR.num;
  return n;
}

/** A table builder: `def(min, max, fn, extra)`. */
export function def(min: number, max: number, fn: FnDef["fn"], extra: Partial<FnDef> = {}): FnDef {
  return { min, max, fn, ...extra };
}

/** A function of scalar arguments only, applied element-wise to arrays. */
export function scalarFn(min: number, max: number, fn: (a: Scalar[]) => Scalar): FnDef {
  return {
    min,
    max,
    scalars: "all",
    fn: (args, ev) => fn(args.map((a) => ev.scalar(a))),
  };
}
