/**
 * A stdio MCP server (through @benchmax/mcp's serveMcpStdio) serving the notes env plus a `crash` tool that kills
 * this process in the middle of the call: the MCP-server-crash fault.
 * Run: node --conditions=@benchmax/source --import tsx src/child/mcp-notes.ts
 */
import { defineEnv, type Env, tool } from "@benchmax/core";
import { z } from "zod";
import { notesEnv, notesTasks } from "../notes-env.js";

const mcpSpec = "@benchmax/mcp";
const { serveMcpStdio } = (await import(mcpSpec)) as {
  serveMcpStdio: (env: Env, o?: Record<string, unknown>) => Promise<unknown>;
};

const notes = notesEnv({ tasks: notesTasks(20) });
const crash = defineEnv({
  name: "crash",
  systemPrompt: "",
  tools: [
    tool({
      name: "crash",
      description: "kills the server mid-call",
      parameters: z.object({}),
      execute: () => process.exit(70),
    }),
  ],
  reward: () => ({}),
});
// the notes env with one more tool
const env: Env = {
  ...notes,
  listTools: () => [...notes.listTools(), ...crash.listTools()],
  runTool: (id, call) => (call.name === "crash" ? crash.runTool("x", call) : notes.runTool(id, call)),
};
await crash.init("x", { id: "x", groundTruth: null });
await serveMcpStdio(env);
