// A server process as the soak benchmarks see it from outside, read from /proc (Linux only).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * RSS (bytes), open file descriptors, leftover workspaces (core's Workspace dirs under $TMPDIR/benchmax-<pid>) and
 * child processes of `pid`.
 */
export function procStats(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  const fds = readdirSync(`/proc/${pid}/fd`).length;
  const ws = join(tmpdir(), `benchmax-${pid}`);
  const workspaces = existsSync(ws) ? readdirSync(ws).length : 0;
  let children = 0;
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) children++;
    } catch {
      /* exited */
    }
  }
  return { rss: rssKb * 1024, fds, workspaces, children };
}
