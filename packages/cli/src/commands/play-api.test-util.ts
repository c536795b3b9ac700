import type { PlayServer } from "@benchmax/report";

/** A POST to a play server's API as its page sends it: the session's bearer token and a JSON body. */
export const playApi = (server: PlayServer, path: string, body: unknown) =>
  fetch(new URL(path, server.url), {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

/** `playApi`, answered: the status and the JSON body. */
export async function playPost(server: PlayServer, path: string, body: unknown) {
  const r = await playApi(server, path, body);
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
}
