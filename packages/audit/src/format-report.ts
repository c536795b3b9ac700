import type { AuditReport } from "./audit.js";

/** The report as text: a line per check, then each finding with how to reproduce it. */
export function formatAuditReport(r: AuditReport): string {
  const lines: string[] = [];
  lines.push(
    `benchmax audit ${r.env}: ${r.tasks} tasks, ${r.episodes} adversarial episodes over ${r.transports.join(" + ")} in ${(r.durationMs / 1000).toFixed(1)} s (threshold ${r.threshold})`,
  );
  for (const [name, c] of Object.entries(r.checks)) {
    lines.push(`  ${c.failed ? "FAIL" : c.run ? "ok  " : "--  "} ${name.padEnd(14)} ${c.run} run, ${c.failed} failed`);
  }
  const failed = r.findings.filter((f) => !f.allowed);
  const allowed = r.findings.filter((f) => f.allowed);
  if (failed.length) {
    lines.push("", `${failed.length} finding${failed.length === 1 ? "" : "s"}:`);
    failed.forEach((f, i) => {
      const where = [
        f.transport,
        f.format,
        f.attack && `attack ${f.attack}${f.label ? ` (${f.label})` : ""}`,
        f.taskId && `task ${f.taskId}`,
      ]
        .filter(Boolean)
        .join(", ");
      lines.push(`${i + 1}. [${f.check}] ${where}: ${f.message}`);
      if (f.reproduce) lines.push(`   reproduce: ${f.reproduce}`);
    });
  }
  if (allowed.length) {
    lines.push("", `${allowed.length} accepted by audit.json:`);
    for (const f of allowed) lines.push(`- [${f.check}] ${f.attack ?? ""} ${f.taskId ?? ""}: ${f.allowed}`);
  }
  lines.push("", r.ok ? "audit passed" : "audit FAILED");
  return lines.join("\n");
}
