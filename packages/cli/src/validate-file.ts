import { readFileSync } from "node:fs";
import { DatasetError, parseRowsText, type Task, UsageError, type ValidationReport } from "@benchmax/core";

type Parse = (row: unknown, where: string) => unknown;

/**
 * Check every row of a dataset file: malformed JSON lines and rows the env rejects alike, each reported with its
 * file:line, the whole file read (never stopping at the first bad line). `maxErrors` 0 lists them all.
 */
export function validateFile(path: string, parse: Parse, maxErrors = 0): ValidationReport {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new UsageError(
      `${path}: cannot read dataset file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  const report: ValidationReport = { file: path, total: 0, valid: 0, invalid: 0, errors: [] };
  const fail = (where: string, line: number, message: string, field?: string) => {
    report.invalid++;
    if (maxErrors === 0 || report.errors.length < maxErrors) {
      report.errors.push({ where, line, ...(field ? { field } : {}), message });
    }
  };
  const body = text.replace(/^\uFEFF/, "");
  const rows: Array<{ row: unknown; where: string; line: number }> = [];
  if (path.endsWith(".json") || body.trimStart().startsWith("[")) {
    try {
      rows.push(...parseRowsText(body, path));
    } catch (e) {
      report.total = 1;
      fail(path, 0, e instanceof Error ? e.message : String(e));
      return report;
    }
  } else {
    const lines = body.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const l = lines[i]!.trim();
      if (!l) continue;
      const where = `${path}:${i + 1}`;
      try {
        rows.push({ row: JSON.parse(l), where, line: i + 1 });
      } catch (e) {
        report.total++;
        fail(where, i + 1, `malformed JSON line: ${(e as Error).message}`);
      }
    }
  }
  const ids = new Map<string, string>();
  for (const r of rows) {
    report.total++;
    try {
      const task = parse(r.row, r.where) as Partial<Task> | undefined;
      const id = task && typeof task === "object" && typeof task.id === "string" ? task.id : undefined;
      if (id !== undefined && ids.has(id)) {
        throw new DatasetError(`duplicate task id "${id}" (first at ${ids.get(id)})`, r.where, "id");
      }
      if (id !== undefined) ids.set(id, r.where);
      report.valid++;
    } catch (e) {
      const de = e as Partial<DatasetError>;
      fail(
        r.where,
        r.line,
        e instanceof Error ? e.message : String(e),
        typeof de.field === "string" ? de.field : undefined,
      );
    }
  }
  report.errors.sort((a, b) => a.line - b.line);
  return report;
}
