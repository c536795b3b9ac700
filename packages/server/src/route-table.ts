import type { IncomingMessage, ServerResponse } from "node:http";
import FindMyWay from "find-my-way";
import type { AccessTokens } from "./auth.js";
import { CALL_ROUTE, callId } from "./call-route.js";
import { checkOrigin, type OriginPolicy } from "./edge.js";
import { HttpError } from "./http-error.js";
import type { RouteSpec } from "./route-spec.js";
import { ROUTE_LIST, type RouteName } from "./routes.js";
import { notFound } from "./service/service-error.js";
import type { Handler, RouteHandlers } from "./transports/host-context.js";

/** Dispatch one request to its route's handler, the caller checked first; throws what it refuses. */
export type Route = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

/**
 * The routes, declared once (routes.ts), in find-my-way, each with its handler; another method on a known path is 405.
 * Every route but a public or self-authenticating one checks the caller: a token the server accepts, or (without
 * tokens) the Origin/Host policy.
 */
export function routeTable(
  handlers: RouteHandlers,
  access: AccessTokens | undefined,
  originPolicy: OriginPolicy,
): Route {
  const router = FindMyWay<FindMyWay.HTTPVersion.V1>({ ignoreTrailingSlash: false, caseSensitive: true });
  type Found = { handler: Handler; open: boolean };
  const methods = ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"] as const;
  const notAllowed: Handler = (req) => {
    throw new HttpError(405, "METHOD_NOT_ALLOWED", `${req.method} ${req.url?.split("?")[0]} is not allowed`);
  };
  const declared = new Map<string, Set<string>>();
  /** POST /v1/rollouts/:id/call's store, matched ahead of the router (`callId`): the tool-call hot path. */
  let callStore: Found | undefined;
  /**
   * Routes without a parameter, by method then path, matched ahead of the router: an exact path is what the router
   * would find for it (`/reset` and `/step` run every OpenEnv episode); any other path goes to the router.
   */
  const exact = new Map<string, Map<string, Found>>();
  for (const r of ROUTE_LIST as readonly RouteSpec[]) {
    // a self-authenticating route (`/mcp`) checks its caller in its handler
    const store: Found = { handler: handlers[r.name as RouteName], open: r.public === true || r.selfAuth === true };
    if (r.method === "POST" && r.path === CALL_ROUTE) callStore = store;
    if (!r.path.includes(":") && !r.path.includes("*")) {
      let byPath = exact.get(r.method);
      if (!byPath) exact.set(r.method, (byPath = new Map()));
      byPath.set(r.path, store);
    }
    router.on(r.method, r.path, () => {}, store);
    let set = declared.get(r.path);
    if (!set) declared.set(r.path, (set = new Set()));
    set.add(r.method);
  }
  for (const [path, set] of declared) {
    for (const m of methods) if (!set.has(m)) router.on(m, path, () => {}, { handler: notAllowed, open: false });
  }

  function route(req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? "" : url.slice(q + 1);
    // the direct matches: what the router would find for these paths, without its walk and params object
    const id = callStore && req.method === "POST" ? callId(path) : undefined;
    const direct = id !== undefined ? callStore : exact.get(req.method ?? "GET")?.get(path);
    if (direct) {
      if (!direct.open) {
        const authError = access ? access.check(req.headers.authorization) : checkOrigin(req, originPolicy);
        if (authError) throw authError;
      }
      return direct.handler(req, res, id ?? "", query);
    }
    const found = router.find((req.method ?? "GET") as FindMyWay.HTTPMethod, path);
    const store = found?.store as Found | undefined;
    if (!store?.open) {
      const authError = access ? access.check(req.headers.authorization) : checkOrigin(req, originPolicy);
      if (authError) throw authError;
    }
    if (!found || !store) throw notFound(`no route ${req.method} ${path}`);
    return store.handler(req, res, (found.params as { id?: string }).id ?? "", query);
  }
  return route;
}
