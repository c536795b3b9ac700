// Simulated hosts for fleet tests and benches: network namespaces (iproute2) joined to this one by veth pairs, each
// with its own address in a /30 that exists only inside the pair. Used by packages/reliability's multi-host test and
// bench/fleet.mjs. Needs root (CAP_NET_ADMIN); `netnsUnavailable` says why not where it can't.
import { spawnSync } from "node:child_process";

/** Run a command: its success and its output (stdout, stderr and a spawn error, trimmed). */
export function sh(args) {
  const r = spawnSync(args[0], args.slice(1), { encoding: "utf8" });
  return { ok: r.status === 0, out: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? r.error.message : ""}`.trim() };
}

/** Why network namespaces cannot be used here (`probe`: a namespace name to try), or undefined. */
export function netnsUnavailable(probe) {
  if (process.platform !== "linux") return `not Linux (${process.platform})`;
  if (process.getuid?.() !== 0) return "not root: ip netns needs CAP_NET_ADMIN";
  const add = sh(["ip", "netns", "add", probe]);
  if (!add.ok) return `ip netns add failed: ${add.out || "iproute2 missing?"}`;
  sh(["ip", "netns", "del", probe]);
  return undefined;
}

/** Create each host: its namespace `ns`, the veth pair `hostIf`/`nsIf`, `hostAddr` here and `addr` inside (/30). */
export function createHosts(hosts) {
  for (const h of hosts) {
    for (const step of [
      ["ip", "netns", "add", h.ns],
      ["ip", "link", "add", h.hostIf, "type", "veth", "peer", "name", h.nsIf],
      ["ip", "link", "set", h.nsIf, "netns", h.ns],
      ["ip", "addr", "add", `${h.hostAddr}/30`, "dev", h.hostIf],
      ["ip", "link", "set", h.hostIf, "up"],
      ["ip", "netns", "exec", h.ns, "ip", "addr", "add", `${h.addr}/30`, "dev", h.nsIf],
      ["ip", "netns", "exec", h.ns, "ip", "link", "set", h.nsIf, "up"],
      ["ip", "netns", "exec", h.ns, "ip", "link", "set", "lo", "up"],
    ]) {
      const r = sh(step);
      if (!r.ok) throw new Error(`${step.join(" ")}: ${r.out}`);
    }
  }
}

/** Remove each host (the namespace takes its end of the veth pair, and so the pair, with it). */
export function removeHosts(hosts) {
  for (const h of hosts) {
    sh(["ip", "netns", "del", h.ns]);
    sh(["ip", "link", "del", h.hostIf]);
  }
}
