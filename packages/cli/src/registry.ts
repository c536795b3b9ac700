import { spawnSync } from "node:child_process";
import { UsageError } from "@benchmax/core";

/** The keyword every benchmax env package carries (package.json `keywords`): the env index is the registry's search. */
export const ENV_KEYWORD = "benchmax-env";

const DEFAULT_REGISTRY = "https://registry.npmjs.org/";

/**
 * The npm registry the user's npm uses in `cwd`: `npm config get registry`, so npm's own order holds (the
 * npm_config_registry variable, the project's .npmrc, the user's, the global one). Without npm: the variable, or the
 * public registry.
 */
export function npmRegistry(cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync("npm", ["config", "get", "registry"], { cwd, env, encoding: "utf8", timeout: 30_000 });
  const fromNpm = r.status === 0 ? r.stdout.trim() : "";
  const url = /^https?:\/\//.test(fromNpm) ? fromNpm : (env.npm_config_registry ?? env.NPM_CONFIG_REGISTRY ?? "");
  return withSlash(url || DEFAULT_REGISTRY);
}

function withSlash(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}

export interface EnvPackage {
  name: string;
  version: string;
  description: string;
  keywords: string[];
  /** The registry's last-modified date, when it gives one. */
  date?: string;
}

export interface EnvSearchResult {
  registry: string;
  envs: EnvPackage[];
  /**
   * `keywords`: the registry answered the `keywords:benchmax-env` qualifier (the npm registry does); `scan`: it did
   * not (verdaccio matches text against names and descriptions only), so its listing was read and filtered here.
   */
  via: "keywords" | "scan";
}

interface SearchObject {
  package?: {
    name?: string;
    version?: string;
    description?: string;
    keywords?: unknown;
    date?: string;
    /** verdaccio gives these instead of `version` */
    "dist-tags"?: Record<string, string>;
  };
}

/** At most this many packages are read from a registry that ignores the keywords qualifier. */
const SCAN_LIMIT = 2000;
const PAGE = 250;

/**
 * The env packages a registry has: its search API (`GET /-/v1/search`) asked for `keywords:benchmax-env` and `text`,
 * keeping only packages that carry the keyword. A registry that ignores the qualifier is read page by page instead
 * (up to 2,000 packages) and filtered by keyword and text here.
 */
export async function searchEnvs(options: {
  registry: string;
  text?: string;
  fetch?: typeof fetch;
  signal?: AbortSignal;
}): Promise<EnvSearchResult> {
  const registry = withSlash(options.registry);
  const terms = (options.text ?? "").split(/\s+/).filter(Boolean);
  const get = async (text: string, from: number): Promise<SearchObject[]> => {
    const url = new URL("-/v1/search", registry);
    url.searchParams.set("text", text);
    url.searchParams.set("size", String(PAGE));
    url.searchParams.set("from", String(from));
    let res: Response;
    try {
      res = await (options.fetch ?? fetch)(url, { headers: { accept: "application/json" }, signal: options.signal });
    } catch (e) {
      throw new UsageError(`could not reach the registry ${registry} (${(e as Error).message})`);
    }
    if (!res.ok)
      throw new UsageError(`the registry ${registry} answered ${res.status} to ${url.pathname}${url.search}`);
    const body = (await res.json()) as { objects?: SearchObject[] };
    if (!Array.isArray(body.objects)) throw new UsageError(`the registry ${registry} sent no search results (objects)`);
    return body.objects;
  };
  const byKeyword = (await get([`keywords:${ENV_KEYWORD}`, ...terms].join(" "), 0)).flatMap(envOf);
  if (byKeyword.length > 0) return { registry, envs: sortByName(byKeyword), via: "keywords" };
  const found: EnvPackage[] = [];
  for (let from = 0; from < SCAN_LIMIT; from += PAGE) {
    const page = await get(terms.join(" "), from);
    found.push(...page.flatMap(envOf).filter((p) => matches(p, terms)));
    if (page.length < PAGE) break;
  }
  return { registry, envs: sortByName(dedupe(found)), via: "scan" };
}

function envOf(o: SearchObject): EnvPackage[] {
  const p = o.package;
  const keywords = Array.isArray(p?.keywords) ? p.keywords.filter((k): k is string => typeof k === "string") : [];
  if (!p?.name || !keywords.includes(ENV_KEYWORD)) return [];
  return [
    {
      name: p.name,
      version: p.version ?? p["dist-tags"]?.latest ?? "",
      description: p.description ?? "",
      keywords,
      ...(p.date ? { date: p.date } : {}),
    },
  ];
}

function matches(p: EnvPackage, terms: string[]): boolean {
  const hay = [p.name, p.description, ...p.keywords].join(" ").toLowerCase();
  return terms.every((t) => hay.includes(t.toLowerCase()));
}

function dedupe(envs: EnvPackage[]): EnvPackage[] {
  return [...new Map(envs.map((e) => [e.name, e])).values()];
}

function sortByName(envs: EnvPackage[]): EnvPackage[] {
  return [...envs].sort((a, b) => a.name.localeCompare(b.name));
}

/** The short name `benchmax eval` takes for an env package: `excel` for @benchmax/env-excel, else the package name. */
export function envSpecOf(packageName: string): string {
  const m = /^@benchmax\/env-(.+)$/.exec(packageName);
  return m ? m[1]! : packageName;
}

/** The package a name given to `benchmax add` means: `excel` is @benchmax/env-excel; a package name stays itself. */
export function envPackageOf(name: string): { name: string; spec: string } {
  const at = name.lastIndexOf("@");
  const [bare, version] = at > 0 ? [name.slice(0, at), name.slice(at + 1)] : [name, ""];
  if (!/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(bare)) {
    throw new UsageError(`"${name}" is not a package name (e.g. excel, @benchmax/env-excel, benchmax-env-my-env)`);
  }
  const pkg = bare.startsWith("@") || bare.startsWith(`${ENV_KEYWORD}-`) ? bare : `@benchmax/env-${bare}`;
  return { name: pkg, spec: version ? `${pkg}@${version}` : pkg };
}
