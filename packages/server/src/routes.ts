/**
 * Every HTTP route `serveEnv` answers and its methods: the one list. The router answers 405 for another method on one
 * of them, `openapi.ts` must document exactly these (its `paths` is typed by this table), and routes.test.ts checks
 * the router answers each.
 */
export const ROUTES = {
  "/health": ["get"],
  "/metadata": ["get"],
  "/schema": ["get"],
  "/reset": ["post"],
  "/step": ["post"],
  "/state": ["get"],
  "/mcp": ["post"],
  "/openapi.json": ["get"],
  "/metrics": ["get"],
  "/v1/tools": ["get"],
  "/v1/tasks": ["get"],
  "/v1/rollouts": ["post"],
  "/v1/rollouts/{id}": ["get", "delete"],
  "/v1/rollouts/{id}/call": ["post"],
  "/v1/rollouts/{id}/reward": ["post"],
  "/v1/rollouts/{id}/fork": ["post"],
  "/v1/rollouts/{id}/release": ["post"],
  "/v1/rollouts/{id}/step": ["post"],
  "/v1/group-reward": ["post"],
} as const satisfies Record<string, readonly ("get" | "post" | "delete")[]>;

export type RoutePath = keyof typeof ROUTES;

/** Whether `path` (a request path, no query) is one of the fixed routes. */
export function isRoute(path: string): boolean {
  return Object.hasOwn(ROUTES, path);
}
