/**
 * LibreOffice headless recalculation, as the official pipeline does (evaluation/open_spreadsheet.py):
 * `soffice --headless --calc --convert-to xlsx:"Calc MS Excel 2007 XML" --outdir OUT FILE`. Each concurrent slot
 * has its own user profile (`-env:UserInstallation`), so parallel conversions do not fight over one profile; a
 * time limit kills a hung conversion; at most `concurrency` conversions run at once.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { InfraError, workspaceRoot } from "@benchmax/core";

let found: string | null | undefined;

/** The soffice binary (`$BENCHMAX_SOFFICE`, `soffice`, `libreoffice`), or null when none is installed. */
export function findSoffice(): string | null {
  if (found !== undefined) return found;
  found = null;
  for (const c of [process.env.BENCHMAX_SOFFICE, "soffice", "libreoffice"]) {
    if (!c) continue;
    const r = spawnSync(c, ["--version"], { stdio: "ignore", timeout: 30_000 });
    if (r.status === 0) {
      found = c;
      break;
    }
  }
  return found;
}

export interface LibreOfficeOptions {
  soffice?: string;
  timeoutMs?: number;
  /** soffice processes at once (each with its own profile). */
  concurrency?: number;
  /** Most files converted by one soffice process (default 64). */
  batchSize?: number;
  /** How long a free process waits for more files before starting a batch (default 20 ms). */
  batchWindowMs?: number;
}

interface Pending {
  xlsx: Buffer;
  resolve(b: Buffer): void;
  reject(e: unknown): void;
}

/**
 * Batched recalculation: files waiting while a conversion runs are converted together by the next soffice process
 * (`--convert-to` takes many files), so LibreOffice's start-up cost (seconds) is paid once per batch, not per file.
 * A file missing from a batch's output is retried alone once, so one bad file cannot fail the others.
 */
export class LibreOfficeRecalc {
  private readonly free: number[] = [];
  private readonly pending: Pending[] = [];
  private readonly soffice: string;
  private readonly timeoutMs: number;
  private readonly batchSize: number;
  private readonly windowMs: number;
  private timer: NodeJS.Timeout | undefined;
  /** soffice processes started (for benchmarks). */
  processes = 0;

  constructor(options: LibreOfficeOptions = {}) {
    const bin = options.soffice ?? findSoffice();
    if (!bin) throw new InfraError("LibreOffice (soffice) is not installed; use recalc=embedded", { retryable: false });
    this.soffice = bin;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.batchSize = Math.max(1, options.batchSize ?? 64);
    this.windowMs = Math.max(0, options.batchWindowMs ?? 20);
    const n = Math.max(1, options.concurrency ?? 2);
    for (let i = 0; i < n; i++) this.free.push(i);
  }

  /** Open and re-save an xlsx through LibreOffice so its formulas get cached values. */
  recalc(xlsx: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.pending.push({ xlsx, resolve, reject });
      if (this.pending.length >= this.batchSize || this.windowMs === 0) this.pump();
      else
        this.timer ??= setTimeout(() => {
          this.timer = undefined;
          this.pump();
        }, this.windowMs);
    });
  }

  private pump(): void {
    while (this.free.length && this.pending.length) {
      const slot = this.free.pop()!;
      const batch = this.pending.splice(0, this.batchSize);
      void this.runBatch(slot, batch).finally(() => {
        this.free.push(slot);
        this.pump();
      });
    }
  }

  private async runBatch(slot: number, batch: Pending[], retry = true): Promise<void> {
    let outs: Array<Buffer | undefined>;
    try {
      outs = await this.convert(
        slot,
        batch.map((p) => p.xlsx),
      );
    } catch (e) {
      if (batch.length > 1 && retry) {
        for (const p of batch) await this.runBatch(slot, [p], false);
        return;
      }
      for (const p of batch) p.reject(e);
      return;
    }
    const missing: Pending[] = [];
    batch.forEach((p, i) => {
      const out = outs[i];
      if (out) p.resolve(out);
      else missing.push(p);
    });
    if (missing.length && batch.length > 1 && retry) {
      for (const p of missing) await this.runBatch(slot, [p], false);
    } else for (const p of missing) p.reject(new InfraError("soffice produced no output file"));
  }

  private async convert(slot: number, files: Buffer[]): Promise<Array<Buffer | undefined>> {
    const dir = await mkdtemp(join(workspaceRoot(), "lo-"));
    try {
      const profile = join(workspaceRoot(), `lo-profile-${slot}`);
      await mkdir(profile, { recursive: true });
      await mkdir(join(dir, "in"));
      await mkdir(join(dir, "out"));
      const inputs = files.map((_, i) => join(dir, "in", `book${i}.xlsx`));
      await Promise.all(files.map((b, i) => writeFile(inputs[i]!, b)));
      const args = [
        `-env:UserInstallation=${pathToFileURL(profile).href}`,
        "--headless",
        "--calc",
        "--convert-to",
        "xlsx:Calc MS Excel 2007 XML",
        "--outdir",
        join(dir, "out"),
        ...inputs,
      ];
      this.processes++;
      await new Promise<void>((resolve, reject) => {
        const child = spawn(this.soffice, args, { stdio: ["ignore", "ignore", "pipe"] });
        let err = "";
        child.stderr.on("data", (d: Buffer) => {
          err += d.toString();
        });
        const timer = setTimeout(() => child.kill("SIGKILL"), this.timeoutMs);
        child.on("error", (e) => {
          clearTimeout(timer);
          reject(new InfraError(`soffice failed to start: ${e.message}`));
        });
        child.on("close", (code, signal) => {
          clearTimeout(timer);
          if (signal) reject(new InfraError(`soffice timed out after ${this.timeoutMs} ms`));
          else if (code !== 0) reject(new InfraError(`soffice exited with ${code}: ${err.trim().slice(0, 300)}`));
          else resolve();
        });
      });
      return await Promise.all(files.map((_, i) => readFile(join(dir, "out", `book${i}.xlsx`)).catch(() => undefined)));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
