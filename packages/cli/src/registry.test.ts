import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { envPackageOf, envSpecOf, searchEnvs } from "./registry.js";

// what a registry's search API holds: two envs (one of ours, one of anyone's) and two packages that are not envs
const PACKAGES = [
  { name: "@benchmax/env-excel", version: "0.2.0", description: "Excel env", keywords: ["benchmax", "benchmax-env"] },
  { name: "benchmax-env-glossary", version: "1.0.0", description: "Glossary lookups", keywords: ["benchmax-env"] },
  { name: "@benchmax/core", version: "0.2.0", description: "benchmax core: the Env contract", keywords: ["benchmax"] },
  { name: "excel-env-tools", version: "3.0.0", description: "not an env package" },
];

/**
 * Two search APIs over the same packages: `npm` answers the keywords: qualifier as the npm registry does; `plain`
 * matches every term against name and description only and pages with size/from, as verdaccio 6 does.
 */
function registry(kind: "npm" | "plain"): Server {
  return createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname !== "/-/v1/search") {
      res.writeHead(404).end();
      return;
    }
    const terms = (url.searchParams.get("text") ?? "").split(" ").filter(Boolean);
    const hits = PACKAGES.filter((p) =>
      terms.every((t) => {
        const kw = /^keywords:(.*)$/.exec(t);
        if (kw && kind === "npm") return (p.keywords ?? []).includes(kw[1]!);
        return p.name.includes(t) || p.description.includes(t);
      }),
    );
    const from = Number(url.searchParams.get("from") ?? 0);
    const size = Number(url.searchParams.get("size") ?? 20);
    res.writeHead(200, { "content-type": "application/json" });
    // verdaccio gives dist-tags and versions instead of a version
    const doc = ({ version, ...p }: (typeof PACKAGES)[number]) =>
      kind === "npm"
        ? { ...p, version }
        : { ...p, "dist-tags": { latest: version }, versions: { [version]: "latest" } };
    res.end(
      JSON.stringify({ objects: hits.slice(from, from + size).map((p) => ({ package: doc(p) })), total: hits.length }),
    );
  });
}

const servers: Record<string, { server: Server; url: string }> = {};
beforeAll(async () => {
  for (const kind of ["npm", "plain"] as const) {
    const server = registry(kind);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    servers[kind] = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  }
});
afterAll(async () => {
  for (const s of Object.values(servers)) await new Promise((r) => s.server.close(r));
});

describe("searchEnvs", () => {
  it("asks for the benchmax-env keyword and lists only packages that carry it", async () => {
    const res = await searchEnvs({ registry: servers.npm!.url });
    expect(res.via).toBe("keywords");
    expect(res.registry).toBe(`${servers.npm!.url}/`);
    expect(res.envs.map((e) => e.name)).toEqual(["@benchmax/env-excel", "benchmax-env-glossary"]);
    expect(res.envs[0]).toMatchObject({ version: "0.2.0", description: "Excel env" });
    const excel = await searchEnvs({ registry: servers.npm!.url, text: "Excel" });
    expect(excel.envs.map((e) => e.name)).toEqual(["@benchmax/env-excel"]);
  });

  it("on a registry that ignores the keywords qualifier, reads its listing and filters by keyword and text", async () => {
    const all = await searchEnvs({ registry: servers.plain!.url });
    expect(all.via).toBe("scan");
    expect(all.envs.map((e) => `${e.name}@${e.version}`)).toEqual([
      "@benchmax/env-excel@0.2.0",
      "benchmax-env-glossary@1.0.0",
    ]);
    const some = await searchEnvs({ registry: servers.plain!.url, text: "Glossary" });
    expect(some.envs.map((e) => e.name)).toEqual(["benchmax-env-glossary"]);
    expect((await searchEnvs({ registry: servers.plain!.url, text: "nothing-like-it" })).envs).toEqual([]);
  });

  it("names the registry when it cannot be reached or answers an error", async () => {
    await expect(searchEnvs({ registry: `${servers.npm!.url}/sub/` })).rejects.toThrow(/answered 404/);
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(dead.address() as AddressInfo).port}/`;
    await new Promise((r) => dead.close(r));
    await expect(searchEnvs({ registry: url })).rejects.toThrow(`could not reach the registry ${url}`);
  });
});

describe("env package names", () => {
  it("a short name is one of ours; a package name stays itself, with its version", () => {
    expect(envPackageOf("excel")).toEqual({ name: "@benchmax/env-excel", spec: "@benchmax/env-excel" });
    expect(envPackageOf("benchmax-env-glossary@1.0.0")).toEqual({
      name: "benchmax-env-glossary",
      spec: "benchmax-env-glossary@1.0.0",
    });
    expect(envPackageOf("@acme/env-crm@^2")).toEqual({ name: "@acme/env-crm", spec: "@acme/env-crm@^2" });
    expect(() => envPackageOf("../x")).toThrow(/not a package name/);
    expect(envSpecOf("@benchmax/env-math")).toBe("math");
    expect(envSpecOf("benchmax-env-glossary")).toBe("benchmax-env-glossary");
  });
});
