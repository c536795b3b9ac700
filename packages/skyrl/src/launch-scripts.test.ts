import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { launchScriptPath } from "./launch.js";

const root = join(launchScriptPath(), "..", "..", "..", "..");
const ENVS = ["math", "excel", "wikipedia", "crm"];
const SETTINGS = [
  "MODEL",
  "MAX_TURNS",
  "NUM_GPUS",
  "DATA_DIR",
  "DATASET",
  "TRAIN_BATCH_SIZE",
  "MINI_BATCH_SIZE",
  "TRAIN_ROWS",
  "N_SAMPLES",
  "STOP_STRINGS",
  "MAX_INPUT_LENGTH",
  "MAX_PROMPT_LENGTH",
  "MAX_GENERATE_LENGTH",
  "SKYRL_DIR",
  "DATA_ROOT",
];
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dryRun(script: string, env: Record<string, string> = {}, args: string[] = [], cwd?: string) {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("BENCHMAX_") && !SETTINGS.includes(k)),
  );
  const r = spawnSync("bash", [script, "--dry-run", ...args], {
    env: { ...clean, HOME: "/home/u", BENCHMAX_TOKEN: "tok", ...env },
    encoding: "utf8",
    cwd,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
const envScript = (name: string) => join(root, "envs", name, "skyrl", "run.sh");

/** A DATA_DIR holding what `benchmax export skyrl` wrote: export.json with `train` rows. */
function exported(rows: Record<string, number>, mixed = false): string {
  const dir = mkdtempSync(join(tmpdir(), "bmx-launch-"));
  dirs.push(dir);
  for (const [env, train] of Object.entries(rows)) {
    const d = mixed ? join(dir, env) : dir;
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "export.json"), `${JSON.stringify({ env, train, validation: 3 }, null, 2)}\n`);
  }
  return dir;
}
const override = (out: string, key: string) => new RegExp(`(?:^| )${key.replace(/\./g, "\\.")}=(\\S+)`).exec(out)?.[1];

describe("envs/<name>/skyrl/run.sh --dry-run", () => {
  for (const name of ENVS) {
    it(`${name}: prints the export, serve and SkyRL commands and exits 0`, () => {
      expect(existsSync(envScript(name))).toBe(true);
      const { code, out, err } = dryRun(envScript(name));
      expect(err).toBe("");
      expect(code).toBe(0);
      const lines = out.trim().split("\n");
      // the CLI by a name npm resolves to this project: the installed bin, else npx @benchmax/cli
      const cli = /^(node \S+\/bin\/benchmax\.js|npx --yes @benchmax\/cli) /;
      expect(lines[1]).toMatch(cli);
      expect(out).not.toMatch(/npx benchmax/);
      expect(lines[1]!.replace(cli, "")).toBe(
        `export skyrl ${name} --out /home/u/data/benchmax/${name} --split train=0.9 --env-class benchmax_${name} `,
      );
      expect(lines[2]!.replace(cli, "")).toBe(`serve ${name} --host 127.0.0.1 --port 8000 --token tok &`);
      const train = lines[lines.length - 1]!;
      expect(train).toContain("cd /home/u/SkyRL && env ");
      expect(train).toContain(`PYTHONPATH=/home/u/data/benchmax/${name}/python`);
      expect(train).toContain("BENCHMAX_ENDPOINTS=http://127.0.0.1:8000 BENCHMAX_TOKEN=tok");
      expect(train).toContain("uv run --isolated --extra fsdp -m benchmax_skyrl.entrypoint");
      expect(train).toContain(`data.train_data=\\[\\'/home/u/data/benchmax/${name}/train.parquet\\'\\]`);
      expect(train).toContain(`environment.env_class=benchmax_${name}`);
      expect(train).toMatch(/trainer\.policy\.model\.path=Qwen\/Qwen2\.5-[\d.]+B-Instruct/);
      expect(train).toContain("trainer.algorithm.advantage_estimator=grpo");
      expect(train).toContain("generator.n_samples_per_prompt=5");
      // multi-turn context beyond the prompt limit, and stop strings where SkyRL's sampling params take them
      const prompt = Number(override(train, "trainer.max_prompt_length"));
      const input = Number(override(train, "generator.max_input_length"));
      expect(input).toBeGreaterThan(prompt);
      expect(input).toBeLessThanOrEqual(32768);
      expect(override(train, "generator.sampling_params.stop")).toMatch(/^\\\[\\"\\<\/tool_call\\>\\"/);
      expect(override(train, "generator.eval_sampling_params.stop")).toBe(
        override(train, "generator.sampling_params.stop"),
      );
    });
  }

  it("crm stops on its <execute> blocks too; crm gets room for 8 turns", () => {
    const { out } = dryRun(envScript("crm"));
    expect(out).toContain('generator.sampling_params.stop=\\[\\"\\</tool_call\\>\\"\\,\\ \\"\\</execute\\>\\"\\]');
    expect(override(out, "generator.max_input_length")).toBe(String(8192 + 2 * 8 * 1024));
  });

  it("derives a batch that fits the exported rows and a mini-batch that divides it (excel 23, wikipedia 40, crm 43)", () => {
    for (const [name, rows, batch, mini] of [
      ["excel", 23, 16, 16],
      ["wikipedia", 40, 32, 16],
      ["crm", 43, 32, 16],
      ["math", 5, 5, 5],
    ] as const) {
      const { code, out, err } = dryRun(envScript(name), { DATA_DIR: exported({ [name]: rows }) });
      expect(err).toBe("");
      expect(code).toBe(0);
      expect(out).toContain(`# ${rows} training rows: train_batch_size=${batch} policy_mini_batch_size=${mini}`);
      expect(override(out, "trainer.train_batch_size")).toBe(String(batch));
      expect(override(out, "trainer.policy_mini_batch_size")).toBe(String(mini));
      expect(batch).toBeLessThanOrEqual(rows);
      expect(batch % mini).toBe(0);
    }
    // the mini-batch also splits over the data-parallel ranks (mini × n_samples % gpus)
    const { out } = dryRun(envScript("math"), { TRAIN_ROWS: "5", NUM_GPUS: "4" });
    expect(override(out, "trainer.policy_mini_batch_size")).toBe("4");
    expect(override(out, "trainer.train_batch_size")).toBe("4");
  });

  it("refuses sizes that cannot start, naming them", () => {
    let r = dryRun(envScript("excel"), { TRAIN_ROWS: "23", TRAIN_BATCH_SIZE: "64" });
    expect(r.code).toBe(2);
    expect(r.err).toContain("TRAIN_BATCH_SIZE=64 is larger than the 23 exported training rows");
    r = dryRun(envScript("excel"), { TRAIN_ROWS: "23", TRAIN_BATCH_SIZE: "20", MINI_BATCH_SIZE: "8" });
    expect(r.code).toBe(2);
    expect(r.err).toContain("TRAIN_BATCH_SIZE=20 is not a multiple of MINI_BATCH_SIZE=8");
    r = dryRun(envScript("excel"), { TRAIN_ROWS: "23", TRAIN_BATCH_SIZE: "20" });
    expect(r.code).toBe(0);
    expect(override(r.out, "trainer.policy_mini_batch_size")).toBe("10");
  });

  it("resolves a relative DATA_DIR (and SKYRL_DIR, DATASET) against where it was started", () => {
    const cwd = exported({ excel: 23 }, true);
    const { code, out } = dryRun(
      envScript("excel"),
      { DATA_DIR: "excel", SKYRL_DIR: "./skyrl", DATASET: "data/set.json" },
      [],
      cwd,
    );
    expect(code).toBe(0);
    expect(out).toContain(`--out ${cwd}/excel `);
    expect(out).toContain(`--dataset ${cwd}/data/set.json`);
    expect(out).toContain(`cd ${cwd}/skyrl && env PYTHONPATH=${cwd}/excel/python`);
    expect(out).toContain("# 23 training rows");
  });

  it("takes every setting from the environment, a fleet instead of local servers, and extra overrides", () => {
    const { code, out } = dryRun(
      envScript("math"),
      {
        MODEL: "Qwen/Qwen2.5-7B-Instruct",
        BENCHMAX_ENDPOINTS: "http://10.0.0.1:8000,http://10.0.0.2:8000",
        BENCHMAX_BIN: "benchmax",
        NUM_GPUS: "8",
        MAX_TURNS: "7",
        DATA_DIR: "/data/m",
        ENV_OPTS: "level=5",
        SKYRL_DIR: "/opt/skyrl",
        STOP_STRINGS: "",
        MAX_INPUT_LENGTH: "9000",
      },
      ["trainer.epochs=1"],
    );
    expect(code).toBe(0);
    expect(out).not.toContain("benchmax serve");
    expect(out.split("\n")[1]).toMatch(/^benchmax export skyrl math /);
    expect(out).toContain("--env-opt level=5");
    expect(out).toContain("cd /opt/skyrl && env PYTHONPATH=/data/m/python");
    expect(out).toContain("BENCHMAX_ENDPOINTS=http://10.0.0.1:8000\\,http://10.0.0.2:8000");
    expect(out).toContain("trainer.policy.model.path=Qwen/Qwen2.5-7B-Instruct");
    expect(out).toContain("trainer.placement.policy_num_gpus_per_node=8");
    expect(out).toContain("generator.max_turns=7");
    expect(out).toContain("generator.max_input_length=9000");
    expect(out).not.toContain("sampling_params.stop");
    expect(out.trim().endsWith("trainer.epochs=1")).toBe(true);
  });

  it("starts N local servers on consecutive ports, with the data root", () => {
    const { out } = dryRun(envScript("wikipedia"), { NUM_SERVERS: "3", BENCHMAX_PORT: "9000", DATA_ROOT: "/srv/data" });
    expect(out.match(/serve wikipedia/g)).toHaveLength(3);
    expect(out.match(/--data-root \/srv\/data/g)).toHaveLength(3);
    expect(out).toContain("BENCHMAX_ENDPOINTS=http://127.0.0.1:9000\\,http://127.0.0.1:9001\\,http://127.0.0.1:9002");
  });

  it("prints help", () => {
    const r = spawnSync("bash", [launchScriptPath(), "--help"], { encoding: "utf8" });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("BENCHMAX_ENDPOINTS");
    expect(r.stdout).toContain("MAX_INPUT_LENGTH");
  });
});

describe("examples/skyrl-mixed/run.sh --dry-run (several envs in one run)", () => {
  const script = join(root, "examples", "skyrl-mixed", "run.sh");

  it("exports each env, serves each on its own ports, and routes each env_class to its servers", () => {
    const data = exported({ math: 12, excel: 23 }, true);
    const { code, out, err } = dryRun(script, { DATA_DIR: data });
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out).toContain(`export skyrl math --out ${data}/math --split train=0.9 --env-class benchmax_math`);
    expect(out).toContain(`export skyrl excel --out ${data}/excel --split train=0.9 --env-class benchmax_excel`);
    expect(out).toMatch(/serve math --host 127\.0\.0\.1 --port 8000 /);
    expect(out).toMatch(/serve excel --host 127\.0\.0\.1 --port 8001 /);
    expect(out).toContain(
      "BENCHMAX_ENV_CLASSES=benchmax_math=http://127.0.0.1:8000\\;benchmax_excel=http://127.0.0.1:8001",
    );
    expect(out).toContain(`data.train_data=\\[\\'${data}/math/train.parquet\\'\\,\\'${data}/excel/train.parquet\\'\\]`);
    // 12 + 23 rows
    expect(out).toContain("# 35 training rows: train_batch_size=32 policy_mini_batch_size=16");
  });

  it("takes a per-class fleet and refuses one-env settings", () => {
    const fleet = "benchmax_math=http://10.0.0.1:8000;benchmax_excel=http://10.0.0.2:8000,http://10.0.0.3:8000";
    const { code, out } = dryRun(script, { BENCHMAX_ENV_CLASSES: fleet, TRAIN_ROWS: "40" });
    expect(code).toBe(0);
    expect(out).not.toMatch(/ serve /);
    expect(out).toContain("BENCHMAX_ENDPOINTS=http://10.0.0.1:8000\\,http://10.0.0.2:8000\\,http://10.0.0.3:8000");
    let r = dryRun(script, { DATASET: "/x.json" });
    expect(r.code).toBe(2);
    expect(r.err).toContain("DATASET_<ENV>");
    r = dryRun(script, { BENCHMAX_ENDPOINTS: "http://10.0.0.1:8000" });
    expect(r.code).toBe(2);
    expect(r.err).toContain("BENCHMAX_ENV_CLASSES");
  });
});
