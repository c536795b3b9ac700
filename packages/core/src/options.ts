import { z } from "zod/v4";
import { UsageError } from "./errors.js";
import { assertZod4, formatZodError } from "./tool.js";

/** Edit distance between two strings (insertions, deletions, substitutions, each 1). */
export function levenshtein(a: string, b: string): number {
  if (a === b) return 0;
  if (!a.length) return b.length;
  if (!b.length) return a.length;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  let cur = new Array<number>(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
    }
    [prev, cur] = [cur, prev];
  }
  return prev[b.length]!;
}

/**
 * The candidate closest to `input` (case-insensitive edit distance), when it is close enough to be a typo:
 * at most `maxDistance` edits (default: 1 for short words, 2 from 5 characters, 3 from 9). Undefined otherwise.
 */
export function didYouMean(input: string, candidates: Iterable<string>, maxDistance?: number): string | undefined {
  const limit = maxDistance ?? (input.length >= 9 ? 3 : input.length >= 5 ? 2 : 1);
  const low = input.toLowerCase();
  let best: string | undefined;
  let bestD = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = levenshtein(low, c.toLowerCase());
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  return bestD <= limit ? best : undefined;
}

/** "unknown option datset; did you mean dataset?" / "…; options are a, b". */
export function unknownNameMessage(kind: string, name: string, known: readonly string[]): string {
  const guess = didYouMean(name, known);
  if (guess) return `unknown ${kind} ${name}; did you mean ${guess}?`;
  return `unknown ${kind} ${name}; ${known.length ? `${kind}s are ${known.join(", ")}` : `there are no ${kind}s`}`;
}

type AnyObject = z.ZodObject<z.ZodRawShape>;

/** One option as a help line shows it. */
export interface OptionInfo {
  name: string;
  /** The JSON Schema type (string, number, boolean, …) when simple. */
  type?: string;
  description?: string;
  default?: unknown;
  required: boolean;
}

/** An env's typed options: the schema, a strict parser for raw values (`--env-opt k=v`), and help lines. */
export interface EnvOptionsSpec<S extends AnyObject = AnyObject> {
  readonly schema: S;
  /** The option names. */
  readonly names: readonly string[];
  /**
   * Check raw options: an unknown name is a UsageError with a suggestion ("unknown option datset; did you mean
   * dataset?"); string values from the command line are converted to the option's type (numbers, booleans, JSON);
   * a bad value is a UsageError naming the option. Defaults of the schema are applied.
   */
  parse(raw?: Record<string, unknown>): z.output<S>;
  /** One line per option, for `--help` and `benchmax list`. */
  describe(): OptionInfo[];
}

/** Command-line text to the option's type: the schema decides which reading fits. */
function coerce(value: unknown, field: z.ZodType): unknown {
  if (typeof value !== "string" || field.safeParse(value).success) return value;
  const t = value.trim();
  const candidates: unknown[] = [];
  if (t === "true" || t === "false") candidates.push(t === "true");
  if (t !== "" && Number.isFinite(Number(t))) candidates.push(Number(t));
  if (/^[[{"]/.test(t) || t === "null") {
    try {
      candidates.push(JSON.parse(t));
    } catch {
      /* not JSON */
    }
  }
  for (const c of candidates) if (field.safeParse(c).success) return c;
  return value;
}

/**
 * Define an env's options with a zod object. The parser refuses unknown names with a "did you mean" suggestion,
 * and the inferred type makes a typo in code a compile error:
 *
 * ```ts
 * const options = defineOptions(z.object({ dataset: z.string().optional(), limit: z.number().int().optional() }));
 * export default defineEnvModule({ name: "x", description: "…", options, createEnv: (o) => makeEnv(o) });
 * // createEnv({ datset: "a" }) does not compile; `--env-opt datset=a` fails: unknown option datset; did you mean dataset?
 * ```
 */
export function defineOptions<S extends AnyObject>(schema: S): EnvOptionsSpec<S> {
  assertZod4(schema, "defineOptions: the options schema");
  if (!(schema instanceof z.ZodObject)) throw new TypeError("defineOptions takes a z.object({...}) of the options");
  const names = Object.keys(schema.shape);
  const strict = schema.strict();
  return {
    schema,
    names,
    parse(raw = {}) {
      if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
        throw new UsageError(`env options must be an object of name → value, got ${JSON.stringify(raw)}`);
      }
      const input: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(raw)) {
        const field = schema.shape[k] as z.ZodType | undefined;
        if (!field) throw new UsageError(unknownNameMessage("option", k, names));
        input[k] = coerce(v, field);
      }
      const res = strict.safeParse(input);
      if (!res.success) throw new UsageError(`bad env option: ${formatZodError(res.error)}`);
      return res.data as z.output<S>;
    },
    describe() {
      const json = z.toJSONSchema(schema, { unrepresentable: "any", io: "input" }) as {
        properties?: Record<string, { type?: string; description?: string; default?: unknown }>;
        required?: string[];
      };
      return names.map((name) => {
        const p = json.properties?.[name] ?? {};
        const info: OptionInfo = { name, required: json.required?.includes(name) ?? false };
        if (typeof p.type === "string") info.type = p.type;
        if (p.description) info.description = p.description;
        if (p.default !== undefined) info.default = p.default;
        return info;
      });
    },
  };
}
