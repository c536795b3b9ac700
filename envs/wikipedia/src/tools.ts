import { ToolError, tool } from "@benchmax/core";
import { z } from "zod";
import { BackendRequestError, BackendUnavailableError, type WikiBackend } from "./backend.js";

/** Per-rollout state: how the backend behaved (a backend down for the whole rollout → infra_error). */
export interface WikiState {
  backendOk: number;
  backendFailures: number;
  lastFailure?: string;
  /** The rollout's own search space (the distractor setting's per-task paragraphs); shared by forked children. */
  backend?: WikiBackend;
}

export const newWikiState = (): WikiState => ({ backendOk: 0, backendFailures: 0 });

export const MAX_SEARCH_LIMIT = 20;
export const DEFAULT_PAGE_CHARS = 4000;
export const MAX_PAGE_CHARS = 10_000;

/** Run a backend call, counting successes and outages; outages and request errors become tool errors. */
async function call<R>(state: WikiState, what: string, fn: () => Promise<R>): Promise<R> {
  try {
    const out = await fn();
    state.backendOk++;
    return out;
  } catch (e) {
    if (e instanceof BackendUnavailableError) {
      state.backendFailures++;
      state.lastFailure = e.message;
      throw new ToolError(`${what} failed: the Wikipedia service is unavailable (${e.message}). Try again.`);
    }
    if (e instanceof BackendRequestError) {
      state.backendOk++; // the service answered
      throw new ToolError(`${what} failed: ${e.message}`);
    }
    throw e;
  }
}

const searchParams = z.object({
  query: z.string().trim().min(1, "query must not be empty").max(300, "query is too long (max 300 characters)"),
  limit: z
    .number()
    .int("limit must be a whole number")
    .min(1, "limit must be at least 1")
    .max(MAX_SEARCH_LIMIT, `limit must be at most ${MAX_SEARCH_LIMIT}`)
    .optional()
    .describe(`How many results (1-${MAX_SEARCH_LIMIT}, default 5)`),
});

const articleParams = z.object({
  title: z.string().trim().min(1, "title must not be empty").max(300, "title is too long"),
  offset: z
    .number()
    .int()
    .min(0, "offset must be >= 0")
    .optional()
    .describe("Character offset to start reading at (default 0)"),
  max_chars: z
    .number()
    .int()
    .min(200, "max_chars must be at least 200")
    .max(MAX_PAGE_CHARS, `max_chars must be at most ${MAX_PAGE_CHARS}`)
    .optional()
    .describe(`How many characters to return (default ${DEFAULT_PAGE_CHARS})`),
});

/** `search_wikipedia` and `get_wikipedia_article`, over whichever backend `backend(state)` gives the rollout. */
export function wikiTools(backend: (state: WikiState) => Promise<WikiBackend>) {
  const search = tool<WikiState, typeof searchParams>({
    name: "search_wikipedia",
    description:
      "Search Wikipedia. Returns up to `limit` article titles, best match first, each with a short snippet. " +
      "Use get_wikipedia_article to read an article.",
    parameters: searchParams,
    async execute({ query, limit }, { state, signal }) {
      const b = await backend(state);
      const hits = await call(state, "search_wikipedia", () => b.search(query, limit ?? 5, signal));
      if (hits.length === 0) return `No results for "${query}". Try other keywords.`;
      const lines = hits.map((h, i) => `${i + 1}. ${h.title}\n   ${h.snippet}`);
      return `Results for "${query}":\n${lines.join("\n")}`;
    },
  });

  const article = tool<WikiState, typeof articleParams>({
    name: "get_wikipedia_article",
    description:
      "Read a Wikipedia article's plain text by its exact title. Long articles come in pages: pass `offset` " +
      "(a character position) to continue reading.",
    parameters: articleParams,
    async execute({ title, offset = 0, max_chars = DEFAULT_PAGE_CHARS }, { state, signal }) {
      const b = await backend(state);
      const a = await call(state, "get_wikipedia_article", () => b.getArticle(title, signal));
      if (!a) {
        const close = await call(state, "get_wikipedia_article", () => b.suggest(title, 5, signal));
        const hint = close.length
          ? ` Did you mean: ${close.map((t) => `"${t}"`).join(", ")}?`
          : " Use search_wikipedia to find titles.";
        throw new ToolError(`No article titled "${title}".${hint}`);
      }
      const total = a.text.length;
      if (offset > 0 && offset >= total) {
        throw new ToolError(`offset ${offset} is past the end of "${a.title}" (${total} characters)`);
      }
      const end = Math.min(total, offset + max_chars);
      const head = [`# ${a.title}`];
      if (a.requestedTitle) head.push(`(requested "${a.requestedTitle}")`);
      head.push(`[characters ${offset}-${end} of ${total}]`);
      const more =
        end < total
          ? `\n\n[more: call get_wikipedia_article with title "${a.title}" and offset ${end}]`
          : "\n\n[end of article]";
      return `${head.join("\n")}\n\n${a.text.slice(offset, end)}${more}`;
    },
  });

  return [search, article];
}
