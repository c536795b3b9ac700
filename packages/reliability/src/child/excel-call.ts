/**
 * One excel tool call in its own process (a call that can take the process down must not take the test runner):
 * argv[2] = tool name, argv[3] = JSON arguments. Prints `{"isError", "content"}` and exits 0.
 * Run: node --max-old-space-size=256 --conditions=@benchmax/source --import tsx src/child/excel-call.ts insert_rows '{"row":5}'
 */
import type { Env, EnvModule } from "@benchmax/core";

const spec = "@benchmax/env-excel";
const mod = (await import(spec)) as { default: EnvModule };
const env: Env = await mod.default.createEnv({});
const tasks = await env.capabilities!.tasks!.loadTasks!();
await env.init("call", tasks[0]!);
const res = await env.runTool("call", { name: process.argv[2]!, arguments: JSON.parse(process.argv[3] ?? "{}") });
process.stdout.write(`${JSON.stringify({ isError: res.isError, content: String(res.content).slice(0, 500) })}\n`);
await env.close();
process.exit(0);
