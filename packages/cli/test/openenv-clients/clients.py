"""Drive `benchmax serve` with OpenEnv's own clients (GenericEnvClient over /ws, MCPToolClient over POST /mcp)."""
import asyncio, json, sys
from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

url = sys.argv[1]
out = {}

def sync_generic():
    with GenericEnvClient(base_url=url).sync() as env:
        r = env.reset(seed=3)
        out["reset"] = {"done": r.done, "reward": r.reward, "obs_keys": sorted(r.observation.keys())}
        prompt = json.dumps(r.observation)[:200]
        out["reset_prompt_head"] = prompt
        out["user_prompt"] = r.observation["messages"][-1]["content"]
        expr = out["user_prompt"].removeprefix("What is ").rstrip("?").replace("\u2212", "-").replace("\u00d7", "*").replace("\u00f7", "/")
        r = env.step({"type": "list_tools"})
        out["list_tools"] = [t["name"] for t in r.observation.get("tools", [])]
        r = env.step({"type": "call_tool", "tool_name": out["list_tools"][0], "arguments": {"expression": expr}})
        out["call_tool"] = {"done": r.done, "obs": r.observation}
        s = env.state()
        out["state_mid"] = s
        r = env.step({"type": "message", "content": "<answer>" + out["call_tool"]["obs"]["result"]["data"] + "</answer>"})
        out["final"] = {"done": r.done, "reward": r.reward}
        out["state_after"] = env.state()

async def mcp_client():
    async with MCPToolClient(base_url=url) as c:
        await c.reset()
        tools = await c.list_tools()
        out["mcp_tools"] = [t.name for t in tools]
        out["mcp_call"] = await c.call_tool(tools[0].name, expression="2^10")
        try:
            await c.call_tool("no_such_tool")
            out["mcp_unknown"] = "no error"
        except Exception as e:
            out["mcp_unknown"] = f"{type(e).__name__}: {e}"[:200]

async def mcp_no_reset():
    async with MCPToolClient(base_url=url) as c:
        tools = await c.list_tools()
        try:
            out["mcp_no_reset_call"] = await c.call_tool(tools[0].name, expression="3*3")
        except Exception as e:
            out["mcp_no_reset_call"] = f"{type(e).__name__}: {e}"[:200]

async def mcp_production():
    async with MCPToolClient(base_url=url) as c:
        c.use_production_mode = True
        tools = await c.list_tools()
        out["prod_tools"] = [t.name for t in tools]
        out["prod_call"] = await c.call_tool(tools[0].name, expression="5*5")
        out["prod_session"] = c._production_session_id is not None

sync_generic()
asyncio.run(mcp_client())
asyncio.run(mcp_no_reset())
asyncio.run(mcp_production())
print(json.dumps(out, indent=1, default=str))
