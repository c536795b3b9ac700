import { mkdtemp } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runMany, runRollout, scriptedPolicy } from "@benchmax/core";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { BackendRequestError, BackendUnavailableError } from "./backend.js";
import { type CorpusDoc, loadCorpus } from "./corpus.js";
import type { WikiTask } from "./dataset.js";
import { createWikipediaEnv, FIXTURE_CORPUS } from "./index.js";
import { DEFAULT_USER_AGENT, LiveBackend } from "./live-backend.js";
import { type MockMediaWiki, type MockMediaWikiOptions, startMockMediaWiki } from "./mock-mediawiki.js";

let docs: CorpusDoc[];
const servers: MockMediaWiki[] = [];
beforeAll(async () => {
  docs = await loadCorpus(FIXTURE_CORPUS);
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function mock(o: Partial<MockMediaWikiOptions> = {}) {
  const s = await startMockMediaWiki({ docs, ...o });
  servers.push(s);
  return s;
}
const fast = { retries: 2, retryBaseMs: 5, timeoutMs: 2000 };

describe("LiveBackend against a local MediaWiki", () => {
  it("searches with list=search and strips the snippet HTML", async () => {
    const s = await mock();
    const b = new LiveBackend({ baseUrl: s.baseUrl, ...fast });
    const hits = await b.search("Orrin River", 3);
    expect(hits[0]).toMatchObject({ title: "Orrin River", url: `${s.baseUrl}/wiki/Orrin_River` });
    expect(hits[0]!.snippet).toMatch(/^The Orrin River is a river/);
    expect(hits[0]!.snippet).not.toContain("<span");
    expect(s.log[0]).toMatch(
      /^\/w\/api\.php\?action=query&list=search&srsearch=Orrin\+River&srlimit=3&srprop=snippet&format=json&formatversion=2$/,
    );
    expect([...s.userAgents]).toEqual([DEFAULT_USER_AGENT]);
  });

  it("reads prop=extracts, follows redirects, and reports missing pages", async () => {
    const s = await mock({ redirects: { "Kaldris Peak": "Mount Kaldris" } });
    const b = new LiveBackend({ baseUrl: s.baseUrl, ...fast, userAgent: "my-bot/1.0 (me@example.org)" });
    const a = await b.getArticle("Valdoria");
    expect(a!.text).toMatch(/^Valdoria is a sovereign state/);
    expect(await b.getArticle("Kaldris_Peak")).toMatchObject({
      title: "Mount Kaldris",
      requestedTitle: "Kaldris_Peak",
    });
    expect(await b.getArticle("Nowhere Land")).toBeUndefined();
    expect(await b.suggest("Mount Kaldris", 3)).toContain("Mount Kaldris");
    expect([...s.userAgents]).toEqual(["my-bot/1.0 (me@example.org)"]);
  });

  it("falls back to the REST page HTML (cleaned with cheerio) when there is no extract", async () => {
    const s = await mock({ htmlOnly: ["Valdoria"] });
    const b = new LiveBackend({ baseUrl: s.baseUrl, ...fast });
    const a = await b.getArticle("Valdoria");
    expect(s.log.some((l) => l === "/api/rest_v1/page/html/Valdoria")).toBe(true);
    expect(a!.text).toMatch(/^Valdoria is a sovereign state/);
    expect(a!.text).not.toMatch(/\[1\]|Navigation box|mw\.config|\.mw-ref/);
  });

  it("parses formatversion=1 answers (pages keyed by id, -1 for missing)", async () => {
    const s = await mock();
    const b = new LiveBackend({ baseUrl: s.baseUrl, ...fast });
    const res = await fetch(`${s.baseUrl}/w/api.php?action=query&prop=extracts&titles=Nowhere&format=json`);
    expect(await res.json()).toMatchObject({ query: { pages: { "-1": { missing: "" } } } });
    // and the backend reads both shapes through the same code path
    expect((await b.getArticle("Keshmar"))!.title).toBe("Keshmar");
  });

  it("retries a 429 (honouring Retry-After) and then succeeds", async () => {
    const s = await mock({ fault: (_u, n) => (n === 0 ? { status: 429, retryAfter: 0 } : undefined) });
    const b = new LiveBackend({ baseUrl: s.baseUrl, ...fast });
    expect((await b.search("Valdoria", 1))[0]!.title).toBe("Valdoria");
    expect(b.stats).toMatchObject({ httpRequests: 2, retries: 1, failures: 0 });
  });

  it("gives up after the retries on persistent 5xx and timeouts (BackendUnavailableError)", async () => {
    const s = await mock({ fault: () => ({ status: 503 }) });
    const b = new LiveBackend({ baseUrl: s.baseUrl, ...fast });
    await expect(b.search("x", 1)).rejects.toThrow(BackendUnavailableError);
    expect(s.log).toHaveLength(3);
    const slow = await mock({ fault: () => ({ delayMs: 300 }) });
    const t = new LiveBackend({ baseUrl: slow.baseUrl, retries: 0, timeoutMs: 50 });
    await expect(t.search("x", 1)).rejects.toThrow(/timed out after 50 ms after 1 attempts/);
  });

  it("turns a 4xx or an API error into a request error, without retrying", async () => {
    const s = await mock({
      fault: (u) => (u.searchParams.get("srsearch") === "bad" ? { status: 400, body: "Bad Request" } : undefined),
    });
    const b = new LiveBackend({ baseUrl: s.baseUrl, ...fast });
    await expect(b.search("bad", 1)).rejects.toThrow(BackendRequestError);
    expect(b.stats.retries).toBe(0);
  });

  it("caps concurrency across callers and caches responses in memory and on disk", async () => {
    const s = await mock({ latencyMs: 20 });
    const cacheDir = await mkdtemp(join(tmpdir(), "wiki-cache-"));
    const b = new LiveBackend({ baseUrl: s.baseUrl, ...fast, concurrency: 3, cacheDir });
    const titles = docs.slice(0, 30).map((d) => d.title);
    await Promise.all(titles.map((t) => b.getArticle(t)));
    expect(s.maxConcurrent).toBeLessThanOrEqual(3);
    expect(b.stats.maxInFlight).toBe(3);
    const before = s.log.length;
    await Promise.all(titles.map((t) => b.getArticle(t)));
    expect(s.log.length).toBe(before); // all from memory
    expect(b.hitRate).toBeCloseTo(0.5, 5);
    // identical requests in flight at the same time go out once
    await Promise.all([b.search("Halvorn", 2), b.search("Halvorn", 2)]);
    expect(b.stats.coalesced).toBe(1);
    const again = new LiveBackend({ baseUrl: s.baseUrl, ...fast, cacheDir });
    const n = s.log.length;
    expect((await again.getArticle(titles[0]!))!.title).toBe(titles[0]);
    expect(again.stats.diskHits).toBe(1);
    expect(s.log.length).toBe(n);
  });
});

describe("wikipedia env with backend=live", () => {
  it("the reference policy solves every fixture through a local MediaWiki", async () => {
    const s = await mock();
    const env = await createWikipediaEnv({ backend: "live", baseUrl: s.baseUrl, concurrency: "4" });
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    const { results } = await runMany(env, tasks, env.capabilities!.reference!.referencePolicy(), {
      concurrency: 16,
      maxTurns: 12,
      retries: 0,
    });
    expect(
      results.filter((r) => r.rewards?.exact_match !== 1).map((r) => `${r.taskId}: ${r.outcome} ${r.error ?? ""}`),
    ).toEqual([]);
    expect(s.maxConcurrent).toBeLessThanOrEqual(4);
    await env.close();
  });

  it("HTTP errors are tool errors; a backend down for the whole rollout is infra_error, not reward 0", async () => {
    let down = false;
    const s = await mock({ fault: () => (down ? { status: 503 } : undefined) });
    const env = await createWikipediaEnv({ backend: "live", baseUrl: s.baseUrl, ...fast });
    const task: WikiTask = {
      id: "t",
      prompt: "Which river flows through Halvorn?",
      groundTruth: ["Kirra River"],
      meta: { shape: "plain" },
    };
    const policy = scriptedPolicy<WikiTask>("p", ({ turn }) =>
      turn === 0
        ? { calls: [{ name: "search_wikipedia", arguments: { query: `Halvorn ${Math.random()}` } }] }
        : turn === 1
          ? { calls: [{ name: "get_wikipedia_article", arguments: { title: "Halvorn" } }] }
          : { answer: "<answer>Kirra River</answer>" },
    );
    // up: scored normally
    const ok = await runRollout(env, task, policy);
    expect(ok).toMatchObject({ outcome: "completed", reward: 1 });
    // down for the whole rollout (the article is cached, so only fresh searches reach the server)
    down = true;
    const env2 = await createWikipediaEnv({ backend: "live", baseUrl: s.baseUrl, ...fast });
    const bad = await runRollout(env2, task, policy);
    expect(bad.outcome).toBe("infra_error");
    expect(bad.reward).toBeUndefined();
    expect(bad.error).toMatch(/live backend was unavailable for the whole rollout/);
    const toolMsgs = bad.messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(toolMsgs[0]).toMatch(
      /^Error: search_wikipedia failed: the Wikipedia service is unavailable \(HTTP 503 after 3 attempts\)/,
    );
    // down for part of the rollout: the model saw a tool error, the rollout is still scored
    const partial = await runRollout(env, task, policy);
    expect(partial).toMatchObject({ outcome: "completed", reward: 1, toolErrors: 1 });
    await env.close();
    await env2.close();
  });

  it("a wiki that cannot be reached at all ends as infra_error", async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, "127.0.0.1", () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const env = await createWikipediaEnv({ backend: "live", baseUrl: `http://127.0.0.1:${port}`, ...fast });
    const task: WikiTask = { id: "t", prompt: "q", groundTruth: ["x"], meta: { shape: "plain" } };
    const r = await runRollout(env, task, env.capabilities!.reference!.referencePolicy());
    expect(r.outcome).toBe("infra_error");
    expect(r.messages.find((m) => m.role === "tool")!.content).toMatch(/ECONNREFUSED/);
  });
});
