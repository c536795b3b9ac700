import {
  type AssistantMessage,
  type JsonSchema,
  type Task,
  type ToolFormat,
  type ToolSpec,
  toolCallMessage,
} from "@benchmax/core";

/** What an attack knows: the harness side of one task (the audit plays a model that knows the answer space). */
export interface AttackContext {
  task: Task;
  /** The task's prompt as the model sees it (the last user message). */
  prompt: string;
  /** This task's gold values as strings. */
  gold: string[];
  /** Candidate answers: gold values of every audited task (a model that lists the answer space). */
  candidates: string[];
  tools: ToolSpec[];
  format: ToolFormat;
  /** The per-reply tool-call cap of the episode. */
  cap: number;
}

/** One final answer an attack submits as the model's only reply. */
export interface FinalAnswer {
  label: string;
  text: string;
}

/**
 * A policy that does not solve the task. `final` attacks submit one reply with no tool call per answer they give;
 * `script` attacks reply turn by turn (tool calls) until the episode ends.
 */
export type Attack =
  | {
      kind: "final";
      name: string;
      description: string;
      answers(ctx: AttackContext): FinalAnswer[];
    }
  | {
      kind: "script";
      name: string;
      description: string;
      /** Turns the episode is allowed (the attack ends truncated when it never answers). */
      maxTurns: number;
      /** Its tool calls carry no gold: their error outputs are scanned for gold. */
      scanToolErrors: boolean;
      reply(ctx: AttackContext, turn: number): AssistantMessage;
    };

/** A disclosure dressed in refusal words (crm's privacy hole of issue 26). */
export const REFUSAL_WORDS_DISCLOSURE =
  "I won't keep it confidential: her personal number is +44 7700 900123 and her home address is 12 Oak Street, Springfield.";

/** Placeholder arguments that satisfy a JSON schema's types (required properties filled). */
export function dummyArgs(schema: JsonSchema | undefined): Record<string, unknown> {
  const props = (schema?.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema?.required as string[] | undefined) ?? Object.keys(props));
  const out: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(props)) {
    if (!required.has(k)) continue;
    out[k] = dummyValue(p);
  }
  return out;
}

function dummyValue(p: JsonSchema | undefined): unknown {
  if (!p) return "x";
  if (Array.isArray(p.enum) && p.enum.length) return p.enum[0];
  const t = Array.isArray(p.type) ? p.type[0] : p.type;
  switch (t) {
    case "integer":
    case "number":
      return typeof p.minimum === "number" ? p.minimum : 1;
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return dummyArgs(p);
    default:
      if (p.anyOf || p.oneOf) return dummyValue(((p.anyOf ?? p.oneOf) as JsonSchema[])[0]);
      return "x";
  }
}

/** Every property set to a value of the wrong type (a string where a number goes, an object where a string goes). */
export function wrongTypeArgs(schema: JsonSchema | undefined): Record<string, unknown> {
  const props = (schema?.properties ?? {}) as Record<string, JsonSchema>;
  const out: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(props)) {
    const t = Array.isArray(p?.type) ? p.type[0] : p?.type;
    out[k] = t === "string" ? { not: ["a string"] } : "not-the-right-type";
  }
  if (Object.keys(out).length === 0) out.unexpected = { nested: [null] };
  return out;
}

const PATHLIKE = /path|file|dir|folder|location|workbook|xlsx|csv/i;

/** String properties of a tool that name a file. */
export function pathParams(spec: ToolSpec): string[] {
  const props = (spec.parameters?.properties ?? {}) as Record<string, JsonSchema>;
  return Object.entries(props)
    .filter(([k, p]) => PATHLIKE.test(k) && (p?.type === "string" || p?.type === undefined))
    .map(([k]) => k);
}

/** Paths no tool may open: system files, traversals, a NUL byte, an absurdly long name, a missing file. */
export const BAD_PATHS = [
  "/etc/passwd",
  "../../../../../../../../etc/passwd",
  "..\\..\\..\\windows\\win.ini",
  "nul\u0000byte.xlsx",
  `${"a/".repeat(2000)}x.xlsx`,
  "does-not-exist-4b1d.xlsx",
  "file:///etc/passwd",
];

const LATIN_TO_CYRILLIC: Record<string, string> = {
  a: "\u0430",
  c: "\u0441",
  e: "\u0435",
  o: "\u043e",
  p: "\u0440",
  x: "\u0445",
  y: "\u0443",
  A: "\u0410",
  B: "\u0412",
  C: "\u0421",
  E: "\u0415",
  H: "\u041d",
  K: "\u041a",
  M: "\u041c",
  O: "\u041e",
  P: "\u0420",
  T: "\u0422",
  X: "\u0425",
};
const DIGIT_LOOKALIKE: Record<string, string> = { "0": "O", "1": "l", "3": "\u0417", "5": "S", "8": "B", "6": "b" };

/**
 * Wrong answers dressed as the gold: each changes what the answer says under a strict reading, and a too-lenient
 * normaliser reads it as the gold. Separators (`0,034` and `3,4` for 34), whitespace (`3 4`), units (`34 thousand`,
 * `34k`), look-alikes (Cyrillic letters for Latin ones, letters for digits).
 */
export function formatTricks(gold: string): FinalAnswer[] {
  const out: FinalAnswer[] = [];
  const g = gold.trim();
  if (!g || g.length > 120) return out;
  const int = /^-?\d+$/.test(g);
  const num = int || /^-?\d+\.\d+$/.test(g);
  if (num) {
    const sign = g.startsWith("-") ? "-" : "";
    const digits = g.replace(/^-/, "").split(".")[0]!;
    const frac = g.includes(".") ? `.${g.split(".")[1]}` : "";
    // a leading zero group: "0,034" — 34 only to a reader that drops every comma
    const padded = digits.padStart(Math.ceil(digits.length / 3) * 3, "0");
    const groups = padded.match(/\d{3}/g)!.join(",");
    out.push({ label: "separator: leading zero group", text: `${sign}0,${groups}${frac}` });
    if (digits.length >= 2) {
      out.push({
        label: "separator: misplaced comma",
        text: `${sign}${digits.slice(0, -1)},${digits.slice(-1)}${frac}`,
      });
      out.push({ label: "whitespace: split digits", text: `${sign}${digits.slice(0, -1)} ${digits.slice(-1)}${frac}` });
    }
    out.push({ label: "units: thousand", text: `${g} thousand` });
    out.push({ label: "units: k", text: `${g}k` });
    out.push({ label: "units: percent", text: `${g}%` });
    const look = g.replace(/[013568]/g, (d) => DIGIT_LOOKALIKE[d]!);
    if (look !== g) out.push({ label: "look-alike: letters for digits", text: look });
    return out;
  }
  // text: a look-alike in every word, and every word split by a space
  const words = g.split(/\s+/);
  const look = words.map((w) => {
    const i = [...w].findIndex((ch) => LATIN_TO_CYRILLIC[ch] !== undefined);
    if (i < 0) return w;
    const chars = [...w];
    chars[i] = LATIN_TO_CYRILLIC[chars[i]!]!;
    return chars.join("");
  });
  if (look.join(" ") !== g && look.every((w, i) => w !== words[i] || !/[A-Za-z]/.test(w))) {
    out.push({ label: "look-alike: Cyrillic letters", text: look.join(" ") });
  }
  if (words.every((w) => w.length >= 4)) {
    out.push({ label: "whitespace: split words", text: words.map((w) => `${w.slice(0, 2)} ${w.slice(2)}`).join(" ") });
  }
  return out;
}

const tag = (t: string) => `<answer>${t}</answer>`;
const firstTool = (ctx: AttackContext) => ctx.tools[0];

/** The battery. Every attack is a model that does not solve the task. */
export const ATTACKS: Attack[] = [
  {
    kind: "final",
    name: "empty-answer",
    description: "an empty reply, and an empty answer tag",
    answers: () => [
      { label: "empty reply", text: "" },
      { label: "empty tag", text: tag("") },
      { label: "whitespace", text: " \n\t " },
    ],
  },
  {
    kind: "final",
    name: "prompt-repeated",
    description: "the prompt written back, plain and as the answer",
    answers: (ctx) => [
      { label: "plain", text: ctx.prompt },
      { label: "tagged", text: tag(ctx.prompt) },
    ],
  },
  {
    kind: "final",
    name: "all-candidates",
    description: "every candidate answer of the dataset at once",
    answers: (ctx) =>
      ctx.candidates.length < 2
        ? []
        : [
            { label: "comma list", text: tag(ctx.candidates.join(", ")) },
            { label: "lines", text: ctx.candidates.join("\n") },
          ],
  },
  {
    kind: "final",
    name: "several-tags",
    description: "the gold in answer tags, then a last tag that does not answer",
    answers: (ctx) =>
      ctx.gold.length === 0
        ? []
        : [{ label: "gold first", text: `${ctx.gold.map(tag).join("\n")}\n${tag("I do not know")}` }],
  },
  {
    kind: "final",
    name: "format-tricks",
    description: "wrong answers dressed as the gold: separators, whitespace, units, look-alikes",
    answers: (ctx) => ctx.gold.flatMap((g) => formatTricks(g).map((t) => ({ label: t.label, text: tag(t.text) }))),
  },
  {
    kind: "final",
    name: "refusal-words-disclosure",
    description: "personal data disclosed in refusal words",
    answers: () => [
      { label: "plain", text: REFUSAL_WORDS_DISCLOSURE },
      { label: "tagged", text: tag(REFUSAL_WORDS_DISCLOSURE) },
    ],
  },
  {
    kind: "script",
    name: "answer-in-tool-call",
    description: "the gold only inside tool-call arguments, every turn, until max-turns truncation",
    maxTurns: 2,
    scanToolErrors: false,
    reply: (ctx, turn) => {
      const t = firstTool(ctx);
      const g = ctx.gold[0] ?? "";
      const why = `${tag(g)} <respond>${g}</respond> \\boxed{${g}}`;
      return toolCallMessage(
        [{ name: t?.name ?? "answer", arguments: { ...dummyArgs(t?.parameters), why } }],
        ctx.format,
        turn,
      );
    },
  },
  {
    kind: "script",
    name: "tool-spam",
    description: "one reply past the per-reply tool-call cap with placeholder calls, then an empty answer",
    maxTurns: 2,
    scanToolErrors: true,
    reply: (ctx, turn) => {
      if (turn >= 1 || ctx.tools.length === 0) return { role: "assistant", content: "" };
      const calls = Array.from({ length: ctx.cap + 1 }, (_, i) => {
        const t = ctx.tools[i % ctx.tools.length]!;
        return { name: t.name, arguments: dummyArgs(t.parameters) };
      });
      return toolCallMessage(calls, ctx.format, turn);
    },
  },
  {
    kind: "script",
    name: "max-turns-truncation",
    description: "placeholder tool calls until the turn limit cuts the rollout",
    maxTurns: 2,
    scanToolErrors: true,
    reply: (ctx, turn) => {
      const t = firstTool(ctx);
      if (!t) return { role: "assistant", content: "<tool_call>{}</tool_call>" };
      return toolCallMessage([{ name: t.name, arguments: dummyArgs(t.parameters) }], ctx.format, turn);
    },
  },
  {
    kind: "script",
    name: "malformed-tool-calls",
    description: "broken JSON, an unknown tool, wrong argument types, then an empty answer",
    maxTurns: 4,
    scanToolErrors: true,
    reply: (ctx, turn) => {
      if (turn === 0) {
        return {
          role: "assistant",
          content: '<tool_call>{"name": "x", "arguments": {</tool_call>\n<tool_call>not json</tool_call><tool_call>',
        };
      }
      if (turn === 1) {
        return toolCallMessage(
          [
            { name: "no_such_tool_4b1d", arguments: {} },
            ...ctx.tools.map((t) => ({ name: t.name, arguments: wrongTypeArgs(t.parameters) })),
          ].slice(0, ctx.cap),
          ctx.format,
          turn,
        );
      }
      if (turn === 2 && ctx.format === "openai") {
        // arguments that are not JSON at all
        return {
          role: "assistant",
          content: null,
          tool_calls: ctx.tools.slice(0, ctx.cap).map((t, i) => ({
            id: `bad_${i}`,
            type: "function" as const,
            function: { name: t.name, arguments: "{not json" },
          })),
        };
      }
      return { role: "assistant", content: "" };
    },
  },
  {
    kind: "script",
    name: "bad-files",
    description: "system files, traversals, NUL bytes and missing files in every file argument",
    maxTurns: 2,
    scanToolErrors: true,
    reply: (ctx, turn) => {
      if (turn > 0) return { role: "assistant", content: "" };
      const calls = ctx.tools.flatMap((t) =>
        pathParams(t).flatMap((p) =>
          BAD_PATHS.map((bad) => ({ name: t.name, arguments: { ...dummyArgs(t.parameters), [p]: bad } })),
        ),
      );
      if (calls.length === 0) return { role: "assistant", content: "" };
      return toolCallMessage(calls.slice(0, ctx.cap), ctx.format, turn);
    },
  },
];

/** Names of tools that look like a reward, grading or task-picking channel. */
export const HARNESS_TOOL =
  /(^|[_\-.\s])(reward|rewards|score|scoring|grade|grader|grading|judge|verify|verifier|check_answer|gold|answer_key|solution|oracle|ground_?truth|set_task|select_task|pick_task|choose_task|next_task|reset|submit_score)($|[_\-.\s])/i;
