/** The function table: every worksheet function the embedded engine implements, by upper-case name. */
import type { FnDef } from "./function-types.js";
import { EXTRA_FNS } from "./functions-extra.js";
import { LOOKUP_FNS } from "./functions-lookup.js";
import { MATH } from "./functions-math.js";
import { TEXT_FNS } from "./functions-text.js";

export const FUNCTIONS: Record<string, FnDef> = { ...MATH, ...TEXT_FNS, ...LOOKUP_FNS, ...EXTRA_FNS };

/** Whether the engine implements a function (name as stored, `_xlfn.` prefix allowed). */
export function isSupported(name: string): boolean {
  return name.toUpperCase().replace(/^_XLFN\._XLWS\.|^_XLFN\.|^_XLWS\./, "") in FUNCTIONS;
}
