/**
 * LibreOffice headless recalculation, as the official pipeline does (evaluation/open_spreadsheet.py):
 * `soffice --headless --calc --convert-to xlsx:"Calc MS Excel 2007 XML" --outdir OUT FILE`, sealed:
 * - every batch runs in its own jail (libreoffice-jail.ts): no network, no host file, a fresh profile, memory and
 *   time caps that kill the whole process tree;
 * - golds and model-written outputs never share a batch; inside a batch each file has an unguessable random name in a
 *   folder that cannot be listed, so a `[book0.xlsx]`-style reference resolves to nothing;
 * - external references in a model-written file are refused before LibreOffice sees it (external-refs.ts);
 * - a batch that fails or runs out of time is split and retried without the offending file.
 * Without user namespaces the jail cannot be built: soffice then runs unjailed (external references still refused),
 * with a warning naming the reason, unless `jail: "require"`.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { cp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { InfraError } from "@benchmax/core";
import { sealAsync } from "./compare-pool.js";
import {
  JAIL_SETUP_FAILED,
  jailCommand,
  makeProfileTemplate,
  officeInstallDir,
  runGroup,
  sofficeJailAvailable,
  writeProfileSettings,
} from "./libreoffice-jail.js";

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

/** A model-written file with its external references refused; a file the check cannot finish is the model's failure. */
async function sealOutput(xlsx: Buffer): Promise<Buffer> {
  try {
    return await sealAsync(xlsx);
  } catch (e) {
    throw new OutputRecalcError(`the workbook could not be checked for external references: ${(e as Error).message}`);
  }
}

/** Who wrote a file: the dataset (`gold`) or the model (`output`). The two never share a LibreOffice batch. */
export type RecalcKind = "gold" | "output";

/**
 * LibreOffice could not recalculate a model-written file on its own (it ran past the time limit, past the memory
 * cap, crashed, or produced nothing) while the same LibreOffice works: the file's doing, so the case scores 0.
 */
export class OutputRecalcError extends Error {
  override name = "OutputRecalcError";
}

export interface LibreOfficeOptions {
  soffice?: string;
  /** Time limit of one conversion batch (default 120 s); the whole process tree is killed past it. */
  timeoutMs?: number;
  /** soffice processes at once (each in its own jail). */
  concurrency?: number;
  /** Most files converted by one soffice process (default 64). */
  batchSize?: number;
  /** How long a free process waits for more files before starting a batch (default 20 ms). */
  batchWindowMs?: number;
  /**
   * "auto" (default): jailed where the machine allows it, else unjailed with a warning; "require": refuse to run
   * unjailed; "off": never jail. Default from `$BENCHMAX_LO_JAIL`.
   */
  jail?: "auto" | "require" | "off";
  /** Address-space cap of soffice.bin in MB (default 2048). */
  memoryMb?: number;
  /** Size of the jail's scratch tmpfs in MB (default 1024). */
  diskMb?: number;
}

interface Pending {
  xlsx: Buffer;
  kind: RecalcKind;
  resolve(b: Buffer): void;
  reject(e: unknown): void;
}

const PREFIX = "benchmax-lo-";

/** Scratch folders of processes that are gone (a killed run): removed at start. */
function removeStale(): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const n of names) {
    const m = /^benchmax-lo-(\d+)-/.exec(n);
    if (!m || Number(m[1]) === process.pid) continue;
    try {
      process.kill(Number(m[1]), 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ESRCH") rmSync(join(tmpdir(), n), { recursive: true, force: true });
    }
  }
}

const warned = new Set<string>();
const templates = new Map<string, Promise<string>>();
const templateDirs: string[] = [];
function removeTemplates(): void {
  for (const d of templateDirs) rmSync(d, { recursive: true, force: true });
}

/**
 * Batched recalculation: files waiting while a conversion runs are converted together by the next soffice process
 * (`--convert-to` takes many files), so LibreOffice's start-up cost (seconds) is paid once per batch, not per file.
 * A batch that fails is split in halves and retried, so one bad file cannot fail the others.
 */
export class LibreOfficeRecalc {
  private readonly free: number[] = [];
  private readonly pending: Pending[] = [];
  private readonly soffice: string;
  private readonly timeoutMs: number;
  private readonly batchSize: number;
  private readonly windowMs: number;
  private readonly memoryMb: number;
  private readonly diskMb: number;
  private readonly installDir: string | null;
  private timer: NodeJS.Timeout | undefined;
  /** soffice processes started (for benchmarks). */
  processes = 0;
  /** Whether conversions run in the jail, and why (or why not). */
  readonly jailed: boolean;
  readonly jailReason: string;
  /** Process-group leaders of the conversions running now (tests check that none outlives its limit). */
  readonly running = new Set<number>();

  constructor(options: LibreOfficeOptions = {}) {
    const bin = options.soffice ?? findSoffice();
    if (!bin) throw new InfraError("LibreOffice (soffice) is not installed; use recalc=embedded", { retryable: false });
    this.soffice = bin;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.batchSize = Math.max(1, options.batchSize ?? 64);
    this.windowMs = Math.max(0, options.batchWindowMs ?? 20);
    this.memoryMb = options.memoryMb ?? 2048;
    this.diskMb = options.diskMb ?? 1024;
    const n = Math.max(1, options.concurrency ?? 2);
    for (let i = 0; i < n; i++) this.free.push(i);
    const fromEnv = process.env.BENCHMAX_LO_JAIL;
    const mode = options.jail ?? (fromEnv === "require" || fromEnv === "off" || fromEnv === "auto" ? fromEnv : "auto");
    const avail = mode === "off" ? { ok: false, reason: 'jail: "off"' } : sofficeJailAvailable(bin);
    this.jailed = avail.ok;
    this.jailReason = avail.reason;
    this.installDir = avail.ok ? officeInstallDir(bin) : null;
    if (!avail.ok) {
      if (mode === "require")
        throw new InfraError(`LibreOffice cannot run in its jail here: ${avail.reason}`, { retryable: false });
      if (mode === "auto" && !warned.has(avail.reason)) {
        warned.add(avail.reason);
        console.warn(
          `[env-excel] LibreOffice runs UNJAILED (${avail.reason}): external references are still refused, but a formula that builds a path at run time can read host files`,
        );
      }
    }
    removeStale();
  }

  /**
   * Open and re-save an xlsx through LibreOffice so its formulas get cached values. `kind` says who wrote it: a
   * model-written output has its external references refused first, and never shares a batch with a gold.
   */
  async recalc(xlsx: Buffer, kind: RecalcKind = "output"): Promise<Buffer> {
    // the model's XML is scanned on a worker thread (compare-pool.ts), never on the event loop
    const input = kind === "output" ? await sealOutput(xlsx) : xlsx;
    return new Promise((resolve, reject) => {
      this.pending.push({ xlsx: input, kind, resolve, reject });
      if (this.pending.filter((p) => p.kind === kind).length >= this.batchSize || this.windowMs === 0) this.pump();
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
      const kind = this.pending[0]!.kind;
      const batch: Pending[] = [];
      for (let i = 0; i < this.pending.length && batch.length < this.batchSize; ) {
        if (this.pending[i]!.kind === kind) batch.push(...this.pending.splice(i, 1));
        else i++;
      }
      void this.runBatch(batch).finally(() => {
        this.free.push(slot);
        this.pump();
      });
    }
  }

  private async runBatch(batch: Pending[], retried = false): Promise<void> {
    let outs: Array<Buffer | undefined>;
    try {
      outs = await this.convert(batch.map((p) => p.xlsx));
    } catch (e) {
      if (batch.length > 1) {
        // the offending file is in one half: split until it is alone; the rest is converted without it
        const half = Math.ceil(batch.length / 2);
        await this.runBatch(batch.slice(0, half), true);
        await this.runBatch(batch.slice(half), true);
        return;
      }
      for (const p of batch) p.reject(this.blame(p, e));
      return;
    }
    const missing: Pending[] = [];
    batch.forEach((p, i) => {
      const out = outs[i];
      if (out) p.resolve(out);
      else missing.push(p);
    });
    if (missing.length && batch.length > 1 && !retried) {
      for (const p of missing) await this.runBatch([p], true);
    } else for (const p of missing) p.reject(this.blame(p, new InfraError("soffice produced no output file")));
  }

  /** A model-written file that fails alone, with a working LibreOffice, is the model's doing. */
  private blame(p: Pending, e: unknown): unknown {
    if (p.kind !== "output" || (e instanceof InfraError && /jail could not be built|failed to start/.test(e.message)))
      return e;
    return new OutputRecalcError(`LibreOffice could not recalculate the workbook: ${(e as Error).message}`);
  }

  /** The profile template, made once per process (per LibreOffice install and jail mode) and shared by instances. */
  private profileTemplate(): Promise<string> {
    const key = `${this.jailed ? "jail" : "host"}:${this.installDir ?? this.soffice}`;
    let made = templates.get(key);
    if (!made) {
      made = this.makeTemplate();
      templates.set(key, made);
      made.catch(() => templates.delete(key));
    }
    return made;
  }

  private async makeTemplate(): Promise<string> {
    const dir = join(tmpdir(), `${PREFIX}${process.pid}-profile-${randomBytes(6).toString("hex")}`);
    if (templates.size === 0) process.once("exit", removeTemplates);
    templateDirs.push(dir);
    const scratch = join(tmpdir(), `${PREFIX}${process.pid}-${randomBytes(8).toString("hex")}`);
    const limit = Math.max(this.timeoutMs, 60_000);
    try {
      if (this.jailed) await makeProfileTemplate(this.installDir!, dir, scratch, this.memoryMb, limit);
      else {
        writeProfileSettings(dir);
        for (let i = 0; i < 2; i++) {
          const r = await runGroup(this.unjailedCommand(scratch, [], dir), limit);
          if (r.code === 0) break;
          if (r.code !== 81 || i === 1) throw new Error(`exit ${r.code}: ${r.stderr.trim().slice(-300)}`);
        }
      }
    } catch (e) {
      throw new InfraError(`LibreOffice failed to start${this.jailed ? " in its jail" : ""}: ${(e as Error).message}`);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    return dir;
  }

  private async convert(files: Buffer[]): Promise<Array<Buffer | undefined>> {
    const template = await this.profileTemplate();
    const dir = join(tmpdir(), `${PREFIX}${process.pid}-${randomBytes(8).toString("hex")}`);
    const names = files.map(() => `${randomBytes(16).toString("hex")}.xlsx`);
    try {
      await mkdir(join(dir, "in"), { recursive: true, mode: 0o700 });
      await mkdir(join(dir, "out"), { mode: 0o700 });
      await Promise.all(files.map((b, i) => writeFile(join(dir, "in", names[i]!), b, { mode: 0o600 })));
      if (!this.jailed) await cp(template, join(dir, "profile"), { recursive: true });
      const argv = this.jailed
        ? jailCommand({
            installDir: this.installDir!,
            hostDir: dir,
            names,
            template,
            memoryMb: this.memoryMb,
            diskMb: this.diskMb,
          })
        : this.unjailedCommand(dir, names, join(dir, "profile"));
      this.processes++;
      let run: Awaited<ReturnType<typeof runGroup>>;
      let pid: number | undefined;
      try {
        run = await runGroup(argv, this.timeoutMs, (p) => {
          pid = p;
          this.running.add(p);
        });
      } catch (e) {
        throw new InfraError(`soffice failed to start: ${(e as Error).message}`);
      } finally {
        if (pid !== undefined) this.running.delete(pid);
      }
      if (run.timedOut) throw new InfraError(`soffice timed out after ${this.timeoutMs} ms`);
      if (this.jailed && run.code === JAIL_SETUP_FAILED)
        throw new InfraError(`the LibreOffice jail could not be built: ${run.stderr.trim().slice(-300)}`);
      if (run.signal) throw new InfraError(`soffice was killed by ${run.signal}`);
      if (run.code !== 0) throw new InfraError(`soffice exited with ${run.code}: ${run.stderr.trim().slice(0, 300)}`);
      return await Promise.all(names.map((n) => readFile(join(dir, "out", n)).catch(() => undefined)));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Without namespaces: soffice on the host, a fresh copy of the profile per batch, in its own process group. */
  private unjailedCommand(dir: string, names: string[], profile: string): string[] {
    const pdeath = existsSync("/usr/bin/setpriv") ? ["setpriv", "--pdeathsig", "KILL", "--"] : [];
    return [
      ...pdeath,
      "env",
      "SAL_ENABLE_FILE_LOCKING=0",
      `HOME=${profile}`,
      this.soffice,
      `-env:UserInstallation=${pathToFileURL(profile).href}`,
      "--headless",
      "--norestore",
      ...(names.length
        ? [
            "--calc",
            "--convert-to",
            "xlsx:Calc MS Excel 2007 XML",
            "--outdir",
            join(dir, "out"),
            ...names.map((n) => join(dir, "in", n)),
          ]
        : ["--terminate_after_init"]),
    ];
  }
}
