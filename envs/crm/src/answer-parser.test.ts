import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerParsePrompt, parseExtracted } from "./answer-parser.js";
import { createCrmEnv } from "./index.js";
import { fixtureOrg } from "./test-org.js";

// a local stand-in for an OpenAI-compatible parser model: it extracts Salesforce Ids or BANT words from the reply
let server: Server;
let baseURL: string;
const prompts: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      const prompt = String(JSON.parse(body).messages.at(-1).content);
      prompts.push(prompt);
      const reply = prompt.slice(prompt.lastIndexOf("Reply: ") + 7);
      const ids = reply.match(/\b[0-9A-Za-z]{3}Wt[0-9A-Za-z]{13}\b/g);
      const bant = reply.match(/\b(Budget|Authority|Need|Timeline)\b/g);
      const items = ids ?? bant ?? ["None"];
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          id: "x",
          object: "chat.completion",
          created: 0,
          model: "parser",
          choices: [
            {
              index: 0,
              finish_reason: "stop",
              message: { role: "assistant", content: JSON.stringify({ extracted_answers: items }) },
            },
          ],
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const AGENT = "005Wt000003NJbJIAW";
// score cases carry the raw CRMArena-Pro record
const task = {
  idx: 1,
  answer: [AGENT],
  task: "handle_time",
  metadata: { required: "- Today's date: 2021-05-04" },
  reward_metric: "exact_match",
  query: "Which agent had the lowest handle time?",
};
const CTX = {} as never;

describe("LLM answer parsing before exact_match (optional)", () => {
  it("deterministic by default: a sentence around the Id scores 0", async () => {
    const env = createCrmEnv({ org: await fixtureOrg() });
    const r = await env.capabilities!.scoring!.scoreCase(
      { id: "a", task, completion: `<respond>The best agent is ${AGENT}</respond>` },
      CTX,
    );
    expect(r.reward).toBe(0);
    expect(r.metadata).toEqual({ judgedBy: "rule" });
    await env.close();
  });

  it("with a parser model, the extracted Id scores 1 (as the original scores it)", async () => {
    const env = createCrmEnv({
      org: await fixtureOrg(),
      answerModel: "parser",
      judgeBaseUrl: baseURL,
      judgeApiKey: "k",
    });
    const score = async (completion: string, t: object = task) =>
      (await env.capabilities!.scoring!.scoreCase({ id: "a", task: t, completion }, CTX)).reward;
    const before = prompts.length;
    expect(await score(`<respond>The best agent is ${AGENT}</respond>`)).toBe(1);
    expect(prompts.length).toBe(before + 1);
    expect(prompts.at(-1)).toContain("Salesforce record IDs");
    // a bare answer equal to the single gold item needs no model call
    expect(await score(`<respond>"${AGENT}"</respond>`)).toBe(1);
    expect(prompts.length).toBe(before + 1);
    expect(await score("<respond>The best agent is 005Wt000003NJbKIAW</respond>")).toBe(0);
    // gold [null] is "None"
    const none = { idx: 2, answer: [null], task: "handle_time", reward_metric: "exact_match", query: "q" };
    expect(await score("<respond>I found no agent matching that.</respond>", none)).toBe(1);
    // the task category picks what is extracted
    const bant = {
      idx: 3,
      answer: ["Authority", "Need"],
      task: "lead_qualification",
      reward_metric: "exact_match",
      query: "q",
    };
    expect(await score("<respond>The lead lacks Need and Authority.</respond>", bant)).toBe(1);
    expect(prompts.at(-1)).toContain("BANT factors");
    await env.close();
  });

  it("a parser endpoint that fails is an error, never a 0", async () => {
    const env = createCrmEnv({
      org: await fixtureOrg(),
      answerModel: "parser",
      judgeBaseUrl: "http://127.0.0.1:9/v1",
      judgeApiKey: "k",
    });
    await expect(
      env.capabilities!.scoring!.scoreCase(
        { id: "a", task, completion: `<respond>The best agent is ${AGENT}</respond>` },
        CTX,
      ),
    ).rejects.toThrow();
    await env.close();
  }, 20_000);

  it("reads the parser's reply: JSON, a bracketed list, or bare text", () => {
    expect(parseExtracted('{"extracted_answers": ["NY", "CA"]}')).toEqual(["NY", "CA"]);
    expect(parseExtracted('Output: {"extracted_answers": [null]}')).toEqual(["None"]);
    expect(parseExtracted("['March', 'May']")).toEqual(["March", "May"]);
    expect(parseExtracted("[None]")).toEqual(["None"]);
    expect(parseExtracted('"Discovery"')).toEqual(["Discovery"]);
    expect(answerParsePrompt("best_region_identification", "Texas")).toContain("two-letter code");
  });
});
