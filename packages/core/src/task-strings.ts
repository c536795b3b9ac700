/**
 * Top-level task fields that hold text a model reads (never file names): walks over the paths a task names skip
 * them, so a server resolving a task's paths and an export making them portable agree on what a path can be.
 */
export const TASK_TEXT_KEYS =
  /^(id|prompt|messages|question|query|instruction|content|text|system|systemPrompt|role|description)$/i;

/** How deep a task's values are walked for paths (deeper values are left as they are). */
export const TASK_WALK_DEPTH = 12;

/**
 * Visit every string in a task outside its top-level text fields (`TASK_TEXT_KEYS`), depth first, with where it
 * sits (`task.init.file`, `task.files[0]`). `visit` returning false stops the walk.
 */
export function forEachTaskString(
  value: unknown,
  visit: (s: string, where: string) => boolean | undefined,
  where = "task",
  depth = 0,
): boolean {
  if (typeof value === "string") return visit(value, where) !== false;
  if (depth > TASK_WALK_DEPTH) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++)
      if (!forEachTaskString(value[i], visit, `${where}[${i}]`, depth + 1)) return false;
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (depth === 0 && TASK_TEXT_KEYS.test(k)) continue;
      if (!forEachTaskString(v, visit, `${where}.${k}`, depth + 1)) return false;
    }
  }
  return true;
}

/** A copy of a task where every string outside its top-level text fields (`TASK_TEXT_KEYS`) is `map(s)`. */
export function mapTaskStrings<T>(value: T, map: (s: string) => string, depth = 0): T {
  if (typeof value === "string") return map(value) as T;
  if (depth > TASK_WALK_DEPTH) return value;
  if (Array.isArray(value)) return value.map((v) => mapTaskStrings(v, map, depth + 1)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      out[k] = depth === 0 && TASK_TEXT_KEYS.test(k) ? v : mapTaskStrings(v, map, depth + 1);
    return out as T;
  }
  return value;
}
