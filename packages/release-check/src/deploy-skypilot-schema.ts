import { Ajv, type ErrorObject } from "ajv";

/**
 * A SkyPilot task-YAML schema, written here (SkyPilot is a Python package; CI installs no Python) from what SkyPilot's
 * own validator does, read in its repository:
 * - `sky/utils/schemas.py` at skypilot-org/skypilot@aa1f97bac403a7472a4f3d72ccfd85d959046fcd: `get_task_schema()` and
 *   `get_resources_schema()` are JSON Schemas closed at every level (`additionalProperties: False`), env names match
 *   `^[a-zA-Z_][a-zA-Z0-9_]*$` with string-or-null values, `num_nodes` and `disk_size` are integers, `cpus`/`memory`
 *   strings or numbers, `ports` a string, an integer, a list of them or null, `job_recovery` a string or a closed
 *   {strategy, max_restarts_on_errors} mapping, `accelerator_args` closed;
 * - `sky/task.py` at skypilot-org/skypilot@f5d492f3852189c0cdc1a2f1a6a8fd9204269a33: before validating, `envs` and
 *   `secrets` values are turned into strings (so `PORT: 8000` in YAML is valid) and `secrets` is validated beside
 *   `envs`, a null value meaning "pass it with --secret".
 * Fields added by SkyPilot releases after that schema (`infra`, `network_tier`, `autostop`, `volumes`, ...) are taken
 * from its task-YAML reference (docs/source/reference/yaml-spec.rst) with permissive value types: the check is strict
 * about names, which is what catches a typo, and loose about those newer values.
 */

const envName = "^[a-zA-Z_][a-zA-Z0-9_]*$";
/** an env or secret value, before SkyPilot turns a scalar into a string */
const envValue = { type: ["string", "number", "boolean", "null"] };
const envMap = {
  type: "object",
  patternProperties: { [envName]: envValue },
  additionalProperties: false,
};
const strOrNum = { type: ["string", "number"] };

const singleResources = {
  type: "object",
  additionalProperties: false,
  properties: {
    // schemas.py
    cloud: { type: "string" },
    region: { type: "string" },
    zone: { type: "string" },
    cpus: strOrNum,
    memory: strOrNum,
    accelerators: {
      anyOf: [
        { type: "string" },
        { type: "object", additionalProperties: { type: ["number", "null"] } },
        { type: "array", items: { type: "string" } },
      ],
    },
    instance_type: { type: "string" },
    use_spot: { type: "boolean" },
    job_recovery: {
      anyOf: [
        { type: "string" },
        {
          type: "object",
          additionalProperties: false,
          properties: {
            strategy: { type: ["string", "null"] },
            max_restarts_on_errors: { type: "integer", minimum: 0 },
          },
        },
      ],
    },
    disk_size: { type: "integer" },
    disk_tier: { type: "string" },
    ports: {
      anyOf: [{ type: ["string", "integer", "null"] }, { type: "array", items: { type: ["string", "integer"] } }],
    },
    labels: { type: "object", additionalProperties: { type: "string" } },
    accelerator_args: {
      type: "object",
      additionalProperties: false,
      properties: { runtime_version: { type: "string" }, tpu_name: { type: "string" }, tpu_vm: { type: "boolean" } },
    },
    image_id: { type: ["string", "object", "null"] },
    // the task-YAML reference, newer releases
    infra: { type: "string" },
    network_tier: { type: "string" },
    autostop: { type: ["boolean", "integer", "string", "object"] },
    priority: { type: "integer" },
  },
};

const resources = {
  ...singleResources,
  properties: {
    ...singleResources.properties,
    any_of: { type: "array", items: singleResources },
    ordered: { type: "array", items: singleResources },
  },
};

export const SKYPILOT_TASK_SCHEMA = {
  type: "object",
  additionalProperties: false,
  properties: {
    // schemas.py
    name: { type: "string" },
    workdir: { type: ["string", "object"] },
    event_callback: { type: "string" },
    num_nodes: { type: "integer", minimum: 1 },
    resources,
    file_mounts: { type: "object" },
    service: { type: "object" },
    setup: { type: "string" },
    run: { type: "string" },
    envs: envMap,
    inputs: { type: "object", maxProperties: 1, additionalProperties: { type: "number" } },
    outputs: { type: "object", maxProperties: 1, additionalProperties: { type: "number" } },
    file_mounts_mapping: { type: "object" },
    config: { type: "object" },
    experimental: { type: "object" },
    // task.py and the task-YAML reference
    secrets: envMap,
    volumes: { type: "object" },
  },
} as const;

const validate = new Ajv({ allErrors: true, strict: false }).compile(SKYPILOT_TASK_SCHEMA);

function explain(e: ErrorObject): string {
  const at = e.instancePath;
  if (e.keyword === "additionalProperties") {
    return `${at}/${(e.params as { additionalProperty: string }).additionalProperty}: unknown field`;
  }
  return `${at || "/"}: ${e.message ?? e.keyword}`;
}

/** The problems of one SkyPilot task (parsed YAML), each led by its JSON path; empty when valid. */
export function validateSkypilotTask(task: unknown): string[] {
  if (validate(task)) return [];
  return [...new Set((validate.errors ?? []).map(explain))];
}
