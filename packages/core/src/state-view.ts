/** One value of a grid cell as a person sees it: a number, text, a boolean, an error text (`#DIV/0!`) or empty. */
export type StateCell = string | number | boolean | null;

/** One sheet of a grid view: its name, where it starts, and the rows of values from there. */
export interface StateSheet {
  name: string;
  /** 1-based row and column of `cells[0][0]` (default 1, 1: `A1`); the page labels rows 1, 2, … and columns A, B, …. */
  firstRow?: number;
  firstColumn?: number;
  cells: StateCell[][];
  /** Set when the sheet's used range was cut to fit (a note for the person, e.g. "first 50 of 1200 rows"). */
  truncated?: string;
}

/**
 * What a person sees of a rollout's state in the playground: a grid (a workbook's sheets, a board, a table) or
 * text (a file tree, a document). Kept small: the env caps it (a few thousand cells, some KB of text).
 */
export type StateView =
  | { kind: "grid"; sheets: StateSheet[]; note?: string }
  | { kind: "text"; text: string; language?: string; note?: string };

/**
 * Capability `stateView` (`Env.capabilities.stateView`): an env whose state a person would rather see than read. A
 * driver that shows state (`benchmax play`) checks for it with `hasStateView(env)`; runners and servers ignore it.
 * Called between steps, never concurrently with a tool call of the same rollout; it must not change the state.
 */
export interface StateViewCapability {
  renderState(rolloutId: string): StateView | undefined | Promise<StateView | undefined>;
}

/** Whether an env offers the state view (`capabilities.stateView`). */
export function hasStateView<
  E extends { readonly capabilities?: { readonly stateView?: Partial<StateViewCapability> } },
>(env: E): env is E & { capabilities: { stateView: StateViewCapability } } {
  return typeof env.capabilities?.stateView?.renderState === "function";
}

/** Problems with a state view an env returned (a driver shows them instead of the view); empty when it is well-formed. */
export function stateViewProblems(view: unknown): string[] {
  if (!view || typeof view !== "object") return ["the state view must be an object with kind grid or text"];
  const v = view as Record<string, unknown>;
  if (v.kind === "text") return typeof v.text === "string" ? [] : ["a text state view needs text (a string)"];
  if (v.kind !== "grid") return [`the state view's kind must be grid or text, got ${JSON.stringify(v.kind)}`];
  if (!Array.isArray(v.sheets)) return ["a grid state view needs sheets (an array)"];
  const out: string[] = [];
  v.sheets.forEach((s: unknown, i) => {
    const sheet = s as Partial<StateSheet> | null;
    if (!sheet || typeof sheet.name !== "string") out.push(`sheets[${i}].name must be a string`);
    else if (!Array.isArray(sheet.cells) || !sheet.cells.every(Array.isArray))
      out.push(`sheets[${i}] (${sheet.name}).cells must be an array of rows`);
  });
  return out;
}
