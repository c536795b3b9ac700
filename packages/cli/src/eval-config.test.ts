import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { configRunName, loadEvalConfig } from "./eval-config.js";

const dir = join(tmpdir(), `bmx-eval-config-${process.pid}`);
mkdirSync(dir, { recursive: true });
let n = 0;
const write = (text: string, ext = "toml") => {
  const f = join(dir, `c${n++}.${ext}`);
  writeFileSync(f, text);
  return f;
};
const errorOf = (f: string, env: NodeJS.ProcessEnv = {}) => {
  try {
    loadEvalConfig(f, env);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("expected an error");
};

const GOOD = `group = 2   # a default for every [[eval]]

[endpoints.qwen]
model = "Qwen/Qwen2.5-7B-Instruct"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "QWEN_KEY"
tool_format = "hermes"

[endpoints.gpt]
model = "gpt-4.1-mini"

[[eval]]
env = ["math", "crm"]
endpoint = ["qwen", "gpt"]
n = 5
max_turns = 4

[[eval]]
env = "./my-env"
policy = "reference"
group = 1
env_args = { level = 3 }
`;

describe("eval config files", () => {
  it("expands each [[eval]] into one run per env × endpoint, with defaults, keys from the environment", () => {
    const f = write(GOOD);
    const { runs } = loadEvalConfig(f, { QWEN_KEY: "sk-qwen" });
    expect(runs.map((r) => `${r.env} ${r.label}`)).toEqual([
      "math qwen",
      "math gpt",
      "crm qwen",
      "crm gpt",
      `${join(dir, "my-env")} reference`,
    ]);
    expect(runs[0]).toMatchObject({
      policy: "openai",
      model: "Qwen/Qwen2.5-7B-Instruct",
      baseUrl: "http://127.0.0.1:8000/v1",
      apiKey: "sk-qwen",
      endpointToolFormat: "hermes",
      settings: { group: 2, n: 5, max_turns: 4 },
    });
    expect(runs[1]).toMatchObject({ model: "gpt-4.1-mini", baseUrl: undefined, apiKey: undefined });
    expect(runs[4]).toMatchObject({ policy: "reference", settings: { group: 1, env_args: { level: 3 } } });
    expect(configRunName("math", "Qwen/Qwen2.5-7B-Instruct")).toBe("math-Qwen_Qwen2.5-7B-Instruct");
  });

  it("takes JSON, and verifiers' key names (env_id, num_examples, rollouts_per_example, url, key)", () => {
    const f = write(
      JSON.stringify({
        endpoints: { local: { model: "m", url: "http://127.0.0.1:1/v1", key: "K" } },
        eval: [{ env_id: "math", endpoint: "local", num_examples: 3, rollouts_per_example: 4 }],
      }),
      "json",
    );
    const { runs } = loadEvalConfig(f, { K: "k" });
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ env: "math", apiKey: "k", baseUrl: "http://127.0.0.1:1/v1" });
    expect(runs[0]!.settings).toMatchObject({ n: 3, group: 4 });
  });

  it("names the file, line and key of what is wrong", () => {
    const typo = write(`[[eval]]\nenv = "math"\n\n[[eval]]\nenv = "crm"\ngrop = 4\n`);
    expect(errorOf(typo)).toContain(`${typo}:6: eval[1].grop: unknown key (known: env, endpoint, model,`);

    const bad = write(
      `[endpoints.a]\nmodel = "m"\nbase_url = "localhost:8000"\n\n[[eval]]\nenv = "math"\nendpoint = "a"\ngroup = 0\n`,
    );
    const msg = errorOf(bad);
    expect(msg).toContain(`${bad}:3: endpoints.a.base_url: must be an http(s) URL (got "localhost:8000")`);
    expect(msg).toContain(`${bad}:8: eval[0].group: must be an integer >= 1 (got 0)`);

    const noEnv = write(`[[eval]]\nmodel = "m"\n`);
    expect(errorOf(noEnv)).toContain(`${noEnv}:1: eval[0].env: is required`);

    expect(errorOf(write(`group = 2\n`))).toMatch(/: eval: is required/);
    expect(errorOf(write(`[[eval]]\nenv = 3\n`))).toMatch(
      /:2: eval\[0\]\.env: must be a string or a list of strings \(got 3\)/,
    );
  });

  it("names an unknown endpoint alias, a missing key variable, and conflicting keys", () => {
    const alias = write(`[endpoints.qwen]\nmodel = "m"\n\n[[eval]]\nenv = "math"\nendpoint = "qwne"\n`);
    expect(errorOf(alias)).toBe(`${alias}:6: eval[0].endpoint: no endpoint "qwne" in [endpoints] (known: qwen)`);

    const key = write(
      `[endpoints.qwen]\nmodel = "m"\napi_key_env = "NOPE_KEY"\n\n[[eval]]\nenv = "math"\nendpoint = "qwen"\n`,
    );
    expect(errorOf(key)).toBe(
      `${key}:3: endpoints.qwen.api_key_env: the environment variable NOPE_KEY is not set (it should hold the API key)`,
    );

    const both = write(`[endpoints.qwen]\nmodel = "m"\n\n[[eval]]\nenv = "math"\nendpoint = "qwen"\nmodel = "x"\n`);
    expect(errorOf(both)).toBe(`${both}:4: eval[0]: give endpoint (an alias from [endpoints]) or model, not both`);

    const dup = write(`[[eval]]\nenv = "math"\nenv_id = "crm"\n`);
    expect(errorOf(dup)).toMatch(/:3: eval\[0\]\.env_id and env say the same thing/);
  });

  it("points at TOML and JSON syntax errors by line", () => {
    const toml = write(`[[eval]]\nenv = "math\n`);
    expect(errorOf(toml)).toMatch(new RegExp(`^${toml.replace(/[.]/g, "\\.")}:2:\\d+: not valid TOML: `));
    const json = write(`{\n  "eval": [\n    {"env": "math",}\n  ]\n}\n`, "json");
    expect(errorOf(json)).toMatch(/not valid JSON/);
    expect(errorOf(join(dir, "missing.toml"))).toMatch(/--config .*missing\.toml: no such file/);
  });

  it("reads the README's example file", () => {
    const readme = readFileSync(resolve(dirname(fileURLToPath(import.meta.url)), "../../../README.md"), "utf8");
    const block = /```toml\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf("**Eval config files.**")))?.[1];
    expect(block).toBeDefined();
    const { runs } = loadEvalConfig(write(block!), { OPENAI_API_KEY: "sk" });
    expect(runs.map((r) => `${r.env.replace(dir, "<dir>")} ${r.label}`)).toEqual([
      "math qwen",
      "math gpt",
      "wikipedia qwen",
      "wikipedia gpt",
      "<dir>/envs/my-env reference",
    ]);
    expect(runs[0]!.settings).toMatchObject({ group: 4, max_turns: 8, n: 50 });
    expect(runs[4]!.settings.env_args).toEqual({ level: 3 });
  });
});
