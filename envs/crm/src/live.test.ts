import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Env } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CrmTask } from "./dataset.js";
import { createCrmEnv } from "./index.js";
import { liveOptionsFromEnv, stripAttributes } from "./live.js";

// A local fake of the Salesforce REST API answering with real-shaped JSON.
let server: Server;
let base = "";
const seen: Array<{ path: string; q: string | null; auth: string | undefined }> = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const q = url.searchParams.get("q");
    seen.push({ path: url.pathname, q, auth: req.headers.authorization });
    res.setHeader("content-type", "application/json");
    const send = (status: number, body: unknown) => {
      res.statusCode = status;
      res.end(JSON.stringify(body));
    };
    if (url.pathname === "/services/data/v59.0/query") {
      if (q?.includes("Bogus")) {
        return send(400, [
          {
            message:
              "\nSELECT Id FROM Bogus\n               ^\nERROR at Row:1:Column:16\nsObject type 'Bogus' is not supported.",
            errorCode: "INVALID_TYPE",
          },
        ]);
      }
      if (q?.includes("Boom")) return send(503, [{ message: "Service Unavailable", errorCode: "SERVER_UNAVAILABLE" }]);
      return send(200, {
        totalSize: 2,
        done: true,
        records: [
          {
            attributes: { type: "Case", url: "/services/data/v59.0/sobjects/Case/500Wt00000AbCdEIAV" },
            Id: "500Wt00000AbCdEIAV",
            Subject: "Battery drains quickly",
            Account: {
              attributes: { type: "Account", url: "/services/data/v59.0/sobjects/Account/001Wt00000XyZ12IAB" },
              Name: "Acme",
            },
          },
          {
            attributes: { type: "Case", url: "/services/data/v59.0/sobjects/Case/500Wt00000AbCdFIAV" },
            Id: "500Wt00000AbCdFIAV",
            Subject: "x",
            Account: null,
          },
        ],
      });
    }
    if (url.pathname === "/services/data/v59.0/search") {
      return send(200, {
        searchRecords: [
          {
            attributes: { type: "Account", url: "/services/data/v59.0/sobjects/Account/001Wt00000XyZ12IAB" },
            Id: "001Wt00000XyZ12IAB",
            Name: "Acme",
          },
        ],
      });
    }
    send(404, [{ message: "The requested resource does not exist", errorCode: "NOT_FOUND" }]);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const task: CrmTask = { id: "t", prompt: "q", groundTruth: { answer: ["Acme"], reward_metric: "exact_match" } };

describe("live backend (jsforce against a local fake org)", () => {
  let env: Env<CrmTask>;
  beforeAll(async () => {
    env = createCrmEnv({
      backend: "live",
      live: { instanceUrl: base, accessToken: "00Dxx!token", maxRetries: 1, retryMinTimeoutMs: 10 },
    });
    await env.init("r", task);
  });
  afterAll(async () => {
    await env.close();
  });

  it("runs SOQL through the REST API and strips attributes", async () => {
    expect(env.listTools().map((t) => t.name)).toEqual(["issue_soql_query", "issue_sosl_query"]);
    const r = await env.runTool("r", {
      name: "issue_soql_query",
      arguments: { query: "SELECT Id, Subject, Account.Name FROM Case" },
    });
    expect(r.isError).toBe(false);
    expect(JSON.parse(r.content as string)).toEqual({
      totalSize: 2,
      done: true,
      records: [
        { Id: "500Wt00000AbCdEIAV", Subject: "Battery drains quickly", Account: { Name: "Acme" } },
        { Id: "500Wt00000AbCdFIAV", Subject: "x", Account: null },
      ],
    });
    const last = seen.at(-1)!;
    expect(last).toMatchObject({ path: "/services/data/v59.0/query", q: "SELECT Id, Subject, Account.Name FROM Case" });
    expect(last.auth).toBe("Bearer 00Dxx!token");
  });

  it("runs SOSL and keeps the record type", async () => {
    const r = await env.runTool("r", {
      name: "issue_sosl_query",
      arguments: { search: "FIND {Acme} RETURNING Account(Id, Name)" },
    });
    expect(JSON.parse(r.content as string)).toEqual({
      searchRecords: [{ attributes: { type: "Account" }, Id: "001Wt00000XyZ12IAB", Name: "Acme" }],
    });
  });

  it("Salesforce errors are tool errors; an unavailable org is an infrastructure error", async () => {
    const bad = await env.runTool("r", { name: "issue_soql_query", arguments: { query: "SELECT Id FROM Bogus" } });
    expect(bad.isError).toBe(true);
    expect(bad.content).toContain('"errorCode":"INVALID_TYPE"');
    await expect(
      env.runTool("r", { name: "issue_soql_query", arguments: { query: "SELECT Id FROM Boom" } }),
    ).rejects.toMatchObject({ name: "InfraError" });
  });

  it("scores like the embedded env", async () => {
    const rewards = await env.computeReward("r", [{ role: "assistant", content: "<respond>Acme</respond>" }], task);
    expect(rewards).toEqual({ score: 1, exact_match: 1 });
    expect(env.capabilities!.metadata!.rolloutMetadata!("r")).toMatchObject({ backend: "live", judgedBy: "rule" });
    await expect(env.capabilities!.tasks!.loadTasks!()).rejects.toThrow(/task file/);
  });
});

describe("live options", () => {
  it("come from SF_* environment variables only", () => {
    expect(liveOptionsFromEnv({})).toBeUndefined();
    expect(liveOptionsFromEnv({ SF_INSTANCE_URL: "https://x.my.salesforce.com", SF_ACCESS_TOKEN: "t" })).toMatchObject({
      instanceUrl: "https://x.my.salesforce.com",
      accessToken: "t",
    });
  });
  it("strips nested attributes", () => {
    expect(
      stripAttributes({ attributes: { type: "A" }, B: { attributes: {}, C: 1 }, D: [{ attributes: {}, E: 2 }] }),
    ).toEqual({ B: { C: 1 }, D: [{ E: 2 }] });
  });
  it("without credentials the first rollout is an infrastructure error", async () => {
    const env = createCrmEnv({ backend: "live", live: {} });
    await expect(env.init("x", task)).rejects.toMatchObject({ name: "InfraError" });
  });
});
