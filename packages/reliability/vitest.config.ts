import { benchmaxVitest } from "../../shared/vitest.preset.ts";

export default benchmaxVitest({
  testTimeout: 120_000,
  // `npm run test:full` only (CONTRIBUTING.md, "Fast and full tests"): env servers and MCP servers started as
  // processes and killed mid-rollout, network namespaces, the excel code jail, a fleet with Python clients.
  // The fuzzers, hostile clients and reward-channel checks run against in-process servers and stay fast.
  slow: [
    "src/excel-sandbox.test.ts", // escapes against the excel env's run_code jail
    "src/faults-mcp.test.ts", // an MCP server process dies mid-call
    "src/faults-remote.test.ts", // env server processes SIGKILLed / SIGSTOPped mid-rollout
    "src/fleet.test.ts", // bench/fleet.mjs: server processes, Python clients, a node SIGKILLed
    "src/multi-host.test.ts", // network namespaces (ip netns), a server per namespace
    "src/soak.test.ts", // rollouts through env servers in a child process
  ],
});
