import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The fleet under faults, at CI's small shape: bench/fleet.mjs with BENCH_FLEET_SHAPE=small runs 3 nodes (network
 * namespaces where this runs as root, else 127.0.0.x addresses) × 2 `benchmax serve math`, 8 training steps of 8
 * prompts × group 4 through the Python adapters (SkyRL's calling sequence and the cookbook's group rollout), and,
 * mid-rollout: SIGKILL of a node, its restart on the same addresses, SIGSTOP/SIGCONT of a node, and a SIGTERM drain;
 * then excel servers on every node driven through RoutedEnv by the excel reference policy, one node SIGKILLed.
 * The timings it reports are the bench's; this test holds what must be true whatever the machine.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const built = ["cli", "server", "core"].every((p) => existsSync(join(root, "packages", p, "dist", "index.js")));
const python = spawnSync("python3", ["--version"]).status === 0;
const reason = !python ? "python3 is not installed" : !built ? "the packages are not built (npm run build)" : undefined;
if (reason) console.warn(`[reliability] SKIPPED the fleet fault test: ${reason}`);

interface Figure {
  id: string;
  value: number;
  pass?: boolean;
  note?: string;
  label: string;
}

describe.skipIf(reason !== undefined)("a fleet under faults (bench/fleet.mjs, small shape)", () => {
  it("loses no training step, no sample and no reward, and leaks no rollout", { timeout: 600_000 }, async () => {
    const { code, out, err } = await new Promise<{ code: number; out: string; err: string }>((resolve) => {
      const p = spawn(process.execPath, [join(root, "bench", "fleet.mjs")], {
        cwd: root,
        env: { ...process.env, BENCH_FLEET_SHAPE: "small" },
      });
      let o = "";
      let e = "";
      p.stdout.on("data", (d) => (o += d));
      p.stderr.on("data", (d) => (e += d));
      p.on("close", (c) => resolve({ code: c ?? 1, out: o, err: e }));
    });
    if (code !== 0) console.error(err.slice(-6000));
    expect(code).toBe(0);
    if (/network namespaces unavailable/.test(err)) {
      console.warn(
        `[reliability] fleet test ran without network namespaces: ${/unavailable \(([^)]*)\)/.exec(err)?.[1]}`,
      );
    }
    const lines = out.trim().split("\n");
    const figures = new Map(
      (JSON.parse(lines[lines.length - 1]!) as { figures: Figure[] }).figures.map((f) => [f.id, f]),
    );
    const value = (id: string) => {
      const f = figures.get(id);
      if (!f) throw new Error(`bench/fleet.mjs reported no ${id}`);
      return f.value;
    };
    // every fault ran, mid-rollout
    expect(figures.get("fleet.drain_exits")?.note).toMatch(/kill node 1, stop node 2, restart node 1.*drain node 0/);
    expect(value("fleet.failed_steps")).toBe(0);
    expect(value("fleet.samples")).toBe(8 * 8 * 4);
    // the lost node's rollouts moved, and no rollout was lost with a 0
    expect(value("fleet.migrated_samples")).toBeGreaterThan(0);
    expect(value("fleet.lost_samples")).toBe(0);
    expect(value("fleet.wrong_rewards")).toBe(0);
    expect(value("fleet.leaked_rollouts")).toBe(0);
    // the drained servers finished their rollouts and exited 0; the restarted node took new rollouts
    expect(value("fleet.drain_exits")).toBe(2);
    expect(value("fleet.back_in_rotation_s")).toBeGreaterThanOrEqual(0);
    // excel through the TypeScript RoutedEnv, a node's servers SIGKILLed mid-run: none failed, every reward right
    expect(value("fleet.excel_failed_rollouts")).toBe(0);
    expect(value("fleet.excel_wrong_rewards")).toBe(0);
  });
});
