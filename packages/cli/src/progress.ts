import type { RunEvent } from "@benchmax/core";
import cliProgress from "cli-progress";

/** `2026-11-24T11:38:18Z`: the prefix of every non-TTY progress line, so CI logs show when things happened. */
export function timestamp(d = new Date()): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Seconds as `45s`, `2m05s`, `1h02m`: whole seconds first, so 119.6 s is `2m00s`, never `1m60s`. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "—";
  const t = Math.round(seconds);
  if (t < 60) return `${t}s`;
  if (t < 3600) return `${Math.floor(t / 60)}m${String(t % 60).padStart(2, "0")}s`;
  const m = Math.round(t / 60);
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

/**
 * Time left, from the mean pace since the run started (rollouts finish in bursts with concurrency, so the pace of
 * the last few would make the estimate jump): unknown until one rollout of this session has finished.
 */
export function etaSeconds(done: number, startDone: number, total: number, elapsedMs: number): number | undefined {
  const finished = done - startDone;
  if (finished <= 0 || elapsedMs <= 0) return undefined;
  return ((total - done) * elapsedMs) / finished / 1000;
}

/**
 * Progress for a run: a bar on a TTY (with a labelled ETA), timestamped plain lines otherwise (every ~10%, and at
 * least one a minute so a slow endpoint never means silence); nothing when quiet.
 */
export function progressReporter(
  label: string,
  options: {
    quiet?: boolean;
    tty?: boolean;
    write?: (s: string) => void;
    now?: () => Date;
    /** Without a TTY, a "still running" line when nothing finished for this long (default 60 s). */
    heartbeatMs?: number;
  } = {},
) {
  const tty = options.tty ?? process.stderr.isTTY === true;
  const write = options.write ?? ((s: string) => process.stderr.write(s));
  const now = options.now ?? (() => new Date());
  const line = (s: string) => write(`${timestamp(now())} ${label}: ${s}\n`);
  let bar: cliProgress.SingleBar | undefined;
  let lastPct = -1;
  let lastLine = 0;
  let errors = 0;
  let rewardSum = 0;
  let scored = 0;
  let done = 0;
  let total = 0;
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let startMs = 0;
  let startDone = 0;
  const heartbeatMs = options.heartbeatMs ?? 60_000;
  return (e: RunEvent) => {
    if (options.quiet) return;
    if (e.type === "start") {
      startMs = now().getTime();
      startDone = e.skipped;
      if (tty) {
        bar = new cliProgress.SingleBar(
          {
            format: `${label} [{bar}] {value}/{total} | reward {reward} | errors {errors} | elapsed {duration_formatted} | ETA {eta}`,
            stream: process.stderr,
            hideCursor: true,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(e.total, e.skipped, { reward: "—", errors: 0, eta: "—" });
      } else {
        line(`${e.total} rollouts${e.skipped ? ` (${e.skipped} resumed)` : ""}`);
        lastLine = now().getTime();
        done = e.skipped;
        total = e.total;
        // a hung endpoint must not mean silence in a CI log
        heartbeat = setInterval(() => {
          if (now().getTime() - lastLine < heartbeatMs) return;
          lastLine = now().getTime();
          line(`still running: ${done}/${total} done, none finished in the last ${Math.round(heartbeatMs / 1000)} s`);
        }, heartbeatMs);
        heartbeat.unref?.();
      }
    } else if (e.type === "rollout") {
      done = e.done;
      if (e.result.outcome === "env_error" || e.result.outcome === "infra_error") errors++;
      if (typeof e.result.reward === "number") {
        rewardSum += e.result.reward;
        scored++;
      }
      const reward = scored ? (rewardSum / scored).toFixed(3) : "—";
      if (bar) {
        const elapsedMs = now().getTime() - startMs;
        const eta = etaSeconds(e.done, startDone, e.total, elapsedMs);
        bar.update(e.done, {
          reward,
          errors,
          eta: eta === undefined ? "—" : formatDuration(eta),
        });
      } else {
        const p = Math.floor((e.done / e.total) * 10);
        const t = now().getTime();
        if (p !== lastPct || e.done === e.total || t - lastLine >= 60_000) {
          lastPct = p;
          lastLine = t;
          line(`${e.done}/${e.total} done, mean reward ${reward}, errors ${errors}`);
        }
      }
    } else if (e.type === "retry") {
      if (!bar) line(`retrying ${e.rolloutId} (attempt ${e.attempt}): ${e.error}`);
    } else if (e.type === "end") {
      if (heartbeat) clearInterval(heartbeat);
      bar?.stop();
    }
  };
}
