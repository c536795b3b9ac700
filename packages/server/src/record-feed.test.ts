import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { feedLine, RECORD_FEED_PATH, RecordFeed } from "./record-feed.js";

const TOKEN = "feed-token";
let dir: string;
let file: string;
let feed: RecordFeed;
let open: RecordFeed;
let server: Server;
let base: string;

const line = (i: number, extra: Record<string, unknown> = {}) =>
  `${JSON.stringify({
    taskId: `t${i}`,
    rolloutId: `r${i}`,
    groupId: `t${i}`,
    sample: 0,
    attempt: 0,
    outcome: "completed",
    reward: i % 2,
    turns: 1,
    toolCalls: 0,
    toolErrors: 0,
    durationMs: 1,
    messages: [{ role: "assistant", content: "ü ✓" }],
    explain: { extracted: "41", gold: `GOLD-${i}` },
    ...extra,
  })}\n`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "benchmax-feed-"));
  file = join(dir, "results.jsonl");
  writeFileSync(file, line(0) + line(1));
  feed = new RecordFeed({ file, token: TOKEN, pollMs: 20 });
  open = new RecordFeed({ file, token: undefined, pollMs: 20 });
  server = createServer((req, res) => (req.url?.startsWith("/open") ? open : feed).handle(req, res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  feed.close();
  open.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

interface Ev {
  id: string;
  event: string;
  data: string;
}

/** Reads events off the feed until `want` of them arrived, keeping every byte received. */
async function take(want: number, headers: Record<string, string> = {}, query = "") {
  const ac = new AbortController();
  const res = await fetch(`${base}${RECORD_FEED_PATH}${query}`, {
    headers: { authorization: `Bearer ${TOKEN}`, ...headers },
    signal: ac.signal,
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  const events: Ev[] = [];
  let raw = "";
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    raw += decoder.decode(chunk, { stream: true });
    const blocks = raw.split("\n\n");
    events.length = 0;
    for (const b of blocks.slice(0, -1)) {
      const f = Object.fromEntries(
        b
          .split("\n")
          .filter((l) => !l.startsWith(":") && l.includes(":"))
          .map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)]),
      );
      if (f.event) events.push({ id: f.id, event: f.event, data: f.data });
    }
    if (events.length >= want) break;
  }
  ac.abort();
  return { events, raw };
}

describe("the recording feed", () => {
  it("answers only the server's token, and only reads", async () => {
    expect((await fetch(base + RECORD_FEED_PATH)).status).toBe(401);
    const wrong = await fetch(base + RECORD_FEED_PATH, { headers: { authorization: "Bearer nope" } });
    expect(wrong.status).toBe(403);
    const post = await fetch(base + RECORD_FEED_PATH, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(post.status).toBe(405);
    // a server with no token does not serve it at all
    const none = await fetch(`${base}/open${RECORD_FEED_PATH}`, { headers: { authorization: "Bearer x" } });
    expect(none.status).toBe(403);
    expect(await none.text()).toContain("needs a server token");
  });

  it("sends every recorded rollout with its offset as the id, and never the gold", async () => {
    const { events, raw } = await take(2);
    expect(events.map((e) => JSON.parse(e.data).rolloutId)).toEqual(["r0", "r1"]);
    expect(Number(events[0]!.id)).toBe(Buffer.byteLength(line(0)));
    expect(Number(events[1]!.id)).toBe(Buffer.byteLength(line(0) + line(1)));
    expect(JSON.parse(events[0]!.data).messages[0].content).toBe("ü ✓");
    expect(raw).not.toContain("GOLD");
    expect(JSON.parse(events[0]!.data).explain).toBeUndefined();
    expect(feedLine("not json")).toBeUndefined();
    expect(feedLine('{"a":1}')).toBeUndefined();
  });

  it("resumes after Last-Event-ID or ?since=, and since=end sends only what comes next", async () => {
    const first = await take(2);
    const resumeAt = first.events[1]!.id;
    await vi.waitFor(() => expect(feed.clientCount).toBe(0), { timeout: 10_000, interval: 10 });
    const later = take(1, { "last-event-id": resumeAt });
    const fromEnd = take(1, {}, "?since=end");
    await vi.waitFor(() => expect(feed.clientCount).toBe(2), { timeout: 10_000, interval: 10 });
    // a torn line is not sent until its end is written
    const l2 = line(2);
    appendFileSync(file, l2.slice(0, 20));
    appendFileSync(file, l2.slice(20));
    const [a, b] = await Promise.all([later, fromEnd]);
    expect(a.events.map((e) => JSON.parse(e.data).rolloutId)).toEqual(["r2"]);
    expect(b.events.map((e) => JSON.parse(e.data).rolloutId)).toEqual(["r2"]);
    const q = await take(1, {}, `?since=${resumeAt}`);
    expect(JSON.parse(q.events[0]!.data).rolloutId).toBe("r2");
  });

  it("refuses an id that is not where a line starts", async () => {
    for (const since of ["5", "999999999", "-1", "abc"]) {
      const r = await fetch(`${base}${RECORD_FEED_PATH}?since=${since}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(r.status, since).toBe(400);
    }
  });
});
