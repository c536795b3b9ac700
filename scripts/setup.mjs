#!/usr/bin/env node
// Bootstraps the workspace on a machine that has only Node and npm:
// installs dependencies with the pinned pnpm (through npx) when they are missing or stale,
// then builds every package (turbo caches unchanged ones). A cold build takes minutes: each package says when it
// starts, and a "still building" line follows any 10 s without output (scripts/heartbeat.mjs).
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runWithHeartbeat } from "./heartbeat.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pnpm = join(root, "scripts", "pnpm.mjs");
const marker = join(root, "node_modules", ".benchmax-installed");

async function run(args, label, doing) {
  const code = await runWithHeartbeat(process.execPath, [pnpm, ...args], { label: doing, cwd: root });
  if (code !== 0) {
    console.error(`benchmax setup: ${label} failed (exit ${code})`);
    process.exit(code || 1);
  }
}

function mtime(p) {
  return existsSync(p) ? statSync(p).mtimeMs : 0;
}

const lock = join(root, "pnpm-lock.yaml");
const stale =
  !existsSync(marker) || mtime(lock) > mtime(marker) || readFileSync(marker, "utf8") !== String(mtime(lock));
if (stale || process.env.BENCHMAX_FORCE_INSTALL) {
  console.log("benchmax setup: installing dependencies (pnpm, through npx)…");
  await run(["install", "--no-frozen-lockfile", "--reporter=append-only"], "pnpm install", "installing dependencies");
  writeFileSync(marker, String(mtime(lock)));
}
if (!process.env.BENCHMAX_SKIP_BUILD) {
  console.log("benchmax setup: building the packages (cached ones are skipped; a cold build takes a few minutes)…");
  const started = Date.now();
  // hash-only: one line as each package's build starts (errors still print in full)
  await run(["exec", "turbo", "run", "build", "--output-logs=hash-only"], "build", "building the packages");
  console.log(`benchmax setup: built in ${Math.round((Date.now() - started) / 1000)} s`);
}
