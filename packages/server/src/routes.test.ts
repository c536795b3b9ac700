import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiDocument, ROUTES } from "./openapi.js";
import { type EnvServer, serveEnv } from "./serve-env.js";
import { calcEnv } from "./test-env.js";

describe("the route table", () => {
  let s: EnvServer;
  beforeAll(async () => {
    s = await serveEnv(calcEnv(), { maxRollouts: 64 });
  });
  afterAll(async () => {
    await s.close();
  });

  it("openapi.json documents exactly the table's routes and methods", () => {
    const doc = openApiDocument(calcEnv()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths).sort()).toEqual(Object.keys(ROUTES).sort());
    for (const [path, methods] of Object.entries(ROUTES)) {
      expect(Object.keys(doc.paths[path]!).sort(), path).toEqual([...methods].sort());
    }
  });

  it("openapi.json's request and response schemas come from the zod wire schemas", () => {
    const doc = openApiDocument(calcEnv()) as { paths: Record<string, Record<string, any>> };
    const call = doc.paths["/v1/rollouts/{id}/call"]!.post;
    const schema = call.requestBody.content["application/json"].schema;
    expect(schema.required).toEqual(["name"]);
    expect(schema.properties.name).toMatchObject({ type: "string", minLength: 1 });
    expect(call.parameters.map((p: { name: string }) => p.name)).toEqual(["id", "X-Rollout-Token"]);
    const step = doc.paths["/step"]!.post.requestBody.content["application/json"].schema;
    // the action names the env's own tools
    expect(JSON.stringify(step.properties.action)).toContain('"add"');
    expect(doc.paths["/health"]!.get.security).toBeUndefined();
  });

  it("the router answers every route of the table with its methods, and 405 for another method", async () => {
    for (const [path, methods] of Object.entries(ROUTES)) {
      for (const method of methods) {
        let url = path;
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (path.includes("{id}")) {
          const r = await fetch(`${s.url}/v1/rollouts`, { method: "POST", body: "{}", headers });
          const { rolloutId, token } = (await r.json()) as { rolloutId: string; token: string };
          url = path.replace("{id}", rolloutId);
          headers["x-rollout-token"] = token;
        }
        const r = await fetch(s.url + url, {
          method: method.toUpperCase(),
          headers,
          body: method === "post" ? "{}" : undefined,
        });
        const text = await r.text();
        expect([404, 405], `${method} ${path}: ${r.status} ${text}`).not.toContain(r.status);
      }
      if (!path.includes("{id}") && path !== "/health") {
        const other = methods.includes("get" as never) ? "PUT" : "GET";
        const r = await fetch(s.url + path, { method: other });
        await r.text();
        expect(r.status, `${other} ${path}`).toBe(405);
      }
    }
  });
});
