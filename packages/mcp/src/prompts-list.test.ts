import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { serveMcpHttp } from "./serve-mcp.js";
import { sumEnv } from "./test-utils/sum-env.js";

describe("MCP prompts (issue 27)", () => {
  it("prompts/list answers an empty list (not -32601), and prompts/get names the missing prompt", async () => {
    const server = await serveMcpHttp(sumEnv().env, { port: 0, token: "op" });
    const client = new Client({ name: "test", version: "1" });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers: { authorization: "Bearer op" } },
        }),
      );
      expect(client.getServerCapabilities()?.prompts).toBeDefined();
      expect(await client.listPrompts()).toMatchObject({ prompts: [] });
      await expect(client.getPrompt({ name: "x" })).rejects.toThrow(/unknown prompt x/);
    } finally {
      await client.close();
      await server.close();
    }
  });
});
