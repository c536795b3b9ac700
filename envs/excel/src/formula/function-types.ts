import type { Evaluator } from "./evaluate.js";
import type { Node } from "./parse.js";
import type { Value } from "./values.js";

/** One worksheet function. */
export interface FnDef {
  min: number;
  max: number;
  /**
   * Parameters that take one value: references there are implicitly intersected (arrays in array mode), and an
   * array argument makes the function apply element-wise. `"all"`, or positions; -1 at the end = "and every later one".
   */
  scalars?: "all" | number[];
  /** Arguments are evaluated as arrays even in a normal formula (SUMPRODUCT, LOOKUP, …). */
  arrayArgs?: boolean;
  /** Only these arguments are evaluated as arrays (INDEX's array). */
  arrayAt?: number[];
  fn?: (args: Value[], ev: Evaluator, array: boolean) => Value;
  /** Arguments are evaluated by the function (IF, IFERROR, CHOOSE, LET, …). */
  lazy?: (args: Node[], ev: Evaluator, array: boolean) => Value;
}
