import type { RolloutResult } from "@benchmax/core";
import { UsageError } from "@benchmax/core";

/** The recording feed's path on a `serve --record` server (see @benchmax/server's record-feed.ts). */
export const FEED_PATH = "/v1/record/feed";

export interface FeedSourceOptions {
  /** The recording server's token (sent as `Authorization: Bearer`). */
  token?: string;
  /** Wait before reconnecting after the stream drops (default 1 s). */
  retryMs?: number;
  /**
   * Start from the server's series instead of its first rollout (`since=series`): called once with the recording's
   * series so far (a SeriesState, or null when the server has none to offer: every rollout follows). Return false to
   * refuse them (another pass threshold, a state that does not parse): the feed is read again from its start.
   */
  onSeries?: (state: unknown) => boolean;
  /** The recording was replaced: what was drawn must be dropped, the feed starts again from its first rollout. */
  onReset?: () => void;
}

export interface FeedSource {
  /** The id of the last event taken (a byte offset of the recording); a reconnect resumes after it. */
  readonly lastEventId: string;
  /** How many times the stream was reopened after a drop. */
  readonly reconnects: number;
  /** Settles once the first connection's `series` event is taken (at once without `onSeries`). */
  readonly ready: Promise<void>;
  close(): void;
}

/** The feed's address for what the user typed: a server's base URL, or the feed's own URL. */
export function feedUrl(url: string): URL {
  const u = new URL(url);
  if (!u.pathname.endsWith(FEED_PATH)) u.pathname = u.pathname.replace(/\/+$/, "") + FEED_PATH;
  return u;
}

/**
 * One SSE event stream read from a fetch body: calls `onEvent` per complete event (the `event`, `id` and joined
 * `data` fields of the text/event-stream format; comments skipped).
 */
async function readEvents(
  body: ReadableStream<Uint8Array>,
  onEvent: (e: { event: string; id?: string; data: string }) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let carry = "";
  let event = "message";
  let id: string | undefined;
  let data: string[] = [];
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    carry += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let nl = carry.indexOf("\n"); nl >= 0; nl = carry.indexOf("\n", start)) {
      let line = carry.slice(start, nl);
      start = nl + 1;
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (data.length) onEvent({ event, ...(id !== undefined ? { id } : {}), data: data.join("\n") });
        event = "message";
        id = undefined;
        data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") data.push(value);
      else if (field === "event") event = value;
      else if (field === "id") id = value;
    }
    carry = carry.slice(start);
  }
}

/**
 * Follows a recording server's feed: every finished rollout it sends goes to `onRollout`, in order. The first
 * connection is awaited (a wrong token, a server without the feed or one that is down is a UsageError); after that a
 * dropped stream is reopened with `Last-Event-ID`, so no rollout is taken twice or missed.
 */
export async function followFeed(
  url: string,
  onRollout: (r: RolloutResult) => void,
  options: FeedSourceOptions = {},
): Promise<FeedSource> {
  const target = feedUrl(url);
  const token = options.token ?? (target.password ? decodeURIComponent(target.password) : undefined);
  target.username = "";
  target.password = "";
  // undefined: the series are asked for (since=series) on the next open
  let lastEventId: string | undefined = options.onSeries ? undefined : "0";
  let reconnects = 0;
  let closed = false;
  let abort = new AbortController();
  let settle: () => void = () => {};
  const ready = options.onSeries ? new Promise<void>((r) => (settle = r)) : Promise.resolve();

  const open = async (): Promise<Response> => {
    abort = new AbortController();
    const url = new URL(target);
    if (lastEventId === undefined) url.searchParams.set("since", "series");
    const res = await fetch(url, {
      headers: {
        accept: "text/event-stream",
        ...(lastEventId !== undefined ? { "last-event-id": lastEventId } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      signal: abort.signal,
    });
    if (res.status === 400 && lastEventId === undefined) {
      // a recording server that predates since=series: its feed from the start
      await res.body?.cancel();
      lastEventId = "0";
      settle();
      return open();
    }
    if (!res.ok || !res.body) {
      const text = await res.text().catch(() => "");
      throw new UsageError(`${target.origin}${FEED_PATH}: HTTP ${res.status} ${text.slice(0, 300)}`.trim());
    }
    return res;
  };
  const consume = (res: Response) => {
    // set when this connection's series were refused: nothing more is taken from it (it is being closed)
    let refused = false;
    return readEvents(res.body!, (e) => {
      if (refused) return;
      if (e.event === "series") {
        let taken = false;
        try {
          taken = options.onSeries?.(JSON.parse(e.data)) ?? false;
        } catch {
          /* a malformed snapshot is refused */
        }
        settle();
        lastEventId = taken && e.id !== undefined ? e.id : "0";
        // refused after the stream already went on from the series' offset: read the feed again from its start
        if (!taken && e.id !== undefined) {
          refused = true;
          abort.abort();
        }
        return;
      }
      if (e.event === "reset") {
        lastEventId = "0";
        options.onReset?.();
      }
      if (e.event !== "rollout") return;
      if (e.id !== undefined) lastEventId = e.id;
      try {
        onRollout(JSON.parse(e.data) as RolloutResult);
      } catch {
        /* a malformed event is skipped */
      }
    });
  };

  let first: Response;
  try {
    first = await open();
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`${target.origin}: cannot reach the recording server (${(e as Error).message})`);
  }
  void (async () => {
    let res: Response | undefined = first;
    while (!closed) {
      try {
        res ??= await open();
        await consume(res);
      } catch {
        /* dropped, refused or aborted: retried below unless closed */
      }
      res = undefined;
      if (closed) break;
      settle(); // no series taken from this connection: do not hold the caller up
      await new Promise((r) => setTimeout(r, options.retryMs ?? 1000).unref());
      reconnects++;
    }
  })();
  return {
    get lastEventId() {
      return lastEventId ?? "0";
    },
    ready,
    get reconnects() {
      return reconnects;
    },
    close() {
      closed = true;
      settle();
      abort.abort();
    },
  };
}
