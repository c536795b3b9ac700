import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";

/**
 * Strict Kubernetes manifest schemas, generated at test time from the models of `@kubernetes/client-node`, which its
 * authors generate from the Kubernetes OpenAPI of one release (each model file names it: "OpenAPI spec version:
 * release-1.36" for 2.0.1). The OpenAPI leaves objects open; here every object gets `additionalProperties: false`, so
 * an unknown or misspelled field (`bogusField`, `readOnlyRootFS`) is refused with its path, as
 * `kubectl apply --validate=strict` refuses it. Nothing is downloaded: the models ship inside the npm package.
 *
 * One difference from the API server: resource quantities (`cpu: 500m`) are strings in the models, so an unquoted
 * number there is refused here although the server would take it.
 */

const require = createRequire(import.meta.url);
const modelsDir = dirname(require.resolve("@kubernetes/client-node/dist/gen/models/all.js"));

/** The kinds this check knows, with the apiVersion each must carry. */
export const KINDS: Readonly<Record<string, string>> = {
  Deployment: "apps/v1",
  StatefulSet: "apps/v1",
  DaemonSet: "apps/v1",
  Service: "v1",
  Secret: "v1",
  ConfigMap: "v1",
  ServiceAccount: "v1",
  Pod: "v1",
  NetworkPolicy: "networking.k8s.io/v1",
  PodDisruptionBudget: "policy/v1",
  Job: "batch/v1",
};

interface Attribute {
  baseName: string;
  type: string;
  format: string;
}

type JsonSchema = Record<string, unknown>;

/** The Kubernetes release the models were generated from, as the package's model files state it. */
export function kubernetesRelease(): string {
  const head = readFileSync(join(modelsDir, "V1Deployment.js"), "utf8").slice(0, 2000);
  const m = /OpenAPI spec version: (\S+)/.exec(head);
  if (!m) throw new Error("@kubernetes/client-node: no 'OpenAPI spec version' line in its models");
  return m[1]!;
}

/** Required properties: the non-optional members of the model's class declaration. */
function requiredOf(model: string): string[] {
  const dts = readFileSync(join(modelsDir, `${model}.d.ts`), "utf8");
  const body = dts.slice(dts.indexOf(`export declare class ${model}`));
  return [...body.matchAll(/^ {4}'([^']+)': /gm)].map((m) => m[1]!);
}

async function attributesOf(model: string): Promise<Attribute[]> {
  const mod = (await import(pathToFileURL(join(modelsDir, `${model}.js`)).href)) as Record<
    string,
    { attributeTypeMap?: Attribute[] }
  >;
  const map = mod[model]?.attributeTypeMap;
  if (!Array.isArray(map)) throw new Error(`@kubernetes/client-node: model ${model} has no attributeTypeMap`);
  return map;
}

const MAP = /^\{ \[key: string\]: (.+); \}$/;
const ARRAY = /^Array<(.+)>$/;

function typeSchema(type: string, format: string, pending: string[]): JsonSchema {
  const map = MAP.exec(type);
  if (map) return { type: "object", additionalProperties: typeSchema(map[1]!, "", pending) };
  const arr = ARRAY.exec(type);
  if (arr) return { type: "array", items: typeSchema(arr[1]!, "", pending) };
  switch (type) {
    case "string":
    case "Date":
      return { type: "string" };
    case "number":
      return { type: format === "int32" || format === "int64" ? "integer" : "number" };
    case "boolean":
      return { type: "boolean" };
    case "IntOrString":
      return { type: ["integer", "string"] };
    case "any":
      return {};
    default:
      if (!/^[A-Z][A-Za-z0-9]+$/.test(type)) throw new Error(`unhandled model type "${type}"`);
      pending.push(type);
      return { $ref: `#/definitions/${type}` };
  }
}

/** A JSON Schema (draft-07) for one model and every model it reaches, each object closed. */
export async function strictSchema(root: string): Promise<JsonSchema> {
  const definitions: Record<string, JsonSchema> = {};
  const pending = [root];
  while (pending.length > 0) {
    const model = pending.pop()!;
    if (definitions[model]) continue;
    definitions[model] = {}; // placeholder against cycles (JSONSchemaProps refers to itself)
    const properties: Record<string, JsonSchema> = {};
    for (const a of await attributesOf(model)) properties[a.baseName] = typeSchema(a.type, a.format, pending);
    definitions[model] = {
      type: "object",
      additionalProperties: false,
      properties,
      required: requiredOf(model),
    };
  }
  return { $ref: `#/definitions/${root}`, definitions };
}

const compiled = new Map<string, ValidateFunction>();

async function validatorFor(kind: string, apiVersion: string): Promise<ValidateFunction> {
  const key = `${apiVersion} ${kind}`;
  let v = compiled.get(key);
  if (!v) {
    const version = apiVersion.split("/").at(-1)!;
    const model = `V${version.slice(1)}${kind}`;
    const { definitions } = await strictSchema(model);
    const schema = {
      definitions,
      allOf: [
        { $ref: `#/definitions/${model}` },
        { required: ["apiVersion", "kind"], properties: { apiVersion: { const: apiVersion }, kind: { const: kind } } },
      ],
    };
    v = new Ajv({ allErrors: true, strict: false }).compile(schema);
    compiled.set(key, v);
  }
  return v;
}

function explain(e: ErrorObject): string {
  const at = e.instancePath || "/";
  if (e.keyword === "additionalProperties") {
    return `${at === "/" ? "" : at}/${(e.params as { additionalProperty: string }).additionalProperty}: unknown field`;
  }
  return `${at}: ${e.message ?? e.keyword}`;
}

/**
 * Validate one manifest object strictly. Returns the problems, each led by the object and the JSON path of the
 * offending field (`Deployment/benchmax-env-servers /spec/template/spec/containers/0/securityContext/readOnlyRootFS:
 * unknown field`); an empty list when the object is valid.
 */
export async function validateManifest(doc: unknown): Promise<string[]> {
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) return ["/: a manifest must be a mapping"];
  const o = doc as { kind?: unknown; apiVersion?: unknown; metadata?: { name?: unknown } };
  const kind = typeof o.kind === "string" ? o.kind : "";
  const expected = KINDS[kind];
  const label = `${kind || "?"}/${typeof o.metadata?.name === "string" ? o.metadata.name : "?"}`;
  if (!expected)
    return [`${label} /kind: "${String(o.kind)}" is not a kind this check knows (${Object.keys(KINDS).join(", ")})`];
  if (o.apiVersion !== expected) return [`${label} /apiVersion: ${kind} is ${expected}, got "${String(o.apiVersion)}"`];
  const validate = await validatorFor(kind, expected);
  if (validate(doc)) return [];
  // allOf repeats the branch's failure as a summary: keep the specific errors
  const errors = (validate.errors ?? []).filter((e) => e.keyword !== "allOf");
  return [...new Set(errors.map((e) => `${label} ${explain(e)}`))];
}
