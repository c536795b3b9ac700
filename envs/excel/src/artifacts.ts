import { writeFile } from "node:fs/promises";
import type { ArtifactData } from "@benchmax/core";
import { type ExcelState, ownFile, type RecordedCall, workbookBytes } from "./tools.js";
import { saveWorkbook } from "./workbook.js";

/** The artifact names excel stores: the rollout's final workbook, and the recorded calls test cases 2+ replay. */
export const WORKBOOK_ARTIFACT = "workbook.xlsx";
export const CALLS_ARTIFACT = "calls.json";

interface StoredCalls {
  calls: RecordedCall[];
  modelFile: boolean;
  stale: boolean;
}

/**
 * What excel's reward reads, as artifacts (`Env.artifacts`): the rollout's final workbook bytes (case 1's output)
 * and its recorded calls (replayed on the inputs of the other test cases), with whether the model's code wrote the
 * file last (such a file is inspected before it is parsed).
 */
export async function excelArtifacts(state: ExcelState): Promise<Record<string, ArtifactData>> {
  // a workbook still held in memory and changed since it was written is what the reward scores
  const held = state as ExcelState & { wb?: Parameters<typeof saveWorkbook>[0]; dirty?: boolean };
  const bytes = canonicalZipDates(held.wb && held.dirty ? await saveWorkbook(held.wb) : await workbookBytes(state));
  const calls: StoredCalls = { calls: state.calls, modelFile: state.modelFile === true, stale: state.stale };
  return { [WORKBOOK_ARTIFACT]: bytes, [CALLS_ARTIFACT]: Buffer.from(JSON.stringify(calls)) };
}

/** Put a stored workbook and calls back into a fresh rollout state (`Env.restoreArtifacts`, for rescore). */
export async function restoreExcelArtifacts(state: ExcelState, artifacts: Record<string, Uint8Array>): Promise<void> {
  const wb = artifacts[WORKBOOK_ARTIFACT];
  const callsBytes = artifacts[CALLS_ARTIFACT];
  if (!wb || !callsBytes) {
    throw new Error(`excel: stored artifacts lack ${!wb ? WORKBOOK_ARTIFACT : CALLS_ARTIFACT}`);
  }
  const stored = JSON.parse(Buffer.from(callsBytes).toString("utf8")) as StoredCalls;
  if (!Array.isArray(stored.calls)) throw new Error(`excel: ${CALLS_ARTIFACT} holds no calls`);
  await writeFile(await ownFile(state), wb);
  state.calls = stored.calls;
  state.modelFile = stored.modelFile;
  state.stale = stored.stale;
}

/** 1980-01-01 00:00, the first DOS date. */
const DOS_TIME = 0;
const DOS_DATE = (0 << 9) | (1 << 5) | 1;

/**
 * A copy of an xlsx (zip) with every entry's modification time set to one fixed value: two workbooks with the same
 * parts then have the same bytes, so a run dir stores them once and rescore scores them once. Only the zip headers'
 * DOS time/date fields change (no part's content, no CRC). Bytes that are not a well-formed zip (a file the model's
 * code wrote) come back unchanged.
 */
export function canonicalZipDates(input: Buffer): Buffer {
  try {
    const buf = Buffer.from(input);
    // end of central directory: 22 bytes + a comment of at most 65,535
    let eocd = -1;
    for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
      if (buf.readUInt32LE(i) === 0x06054b50) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) return input;
    const entries = buf.readUInt16LE(eocd + 10);
    let at = buf.readUInt32LE(eocd + 16);
    for (let n = 0; n < entries; n++) {
      if (at + 46 > buf.length || buf.readUInt32LE(at) !== 0x02014b50) return input;
      const local = buf.readUInt32LE(at + 42);
      if (local + 30 > buf.length || buf.readUInt32LE(local) !== 0x04034b50) return input;
      buf.writeUInt16LE(DOS_TIME, at + 12);
      buf.writeUInt16LE(DOS_DATE, at + 14);
      buf.writeUInt16LE(DOS_TIME, local + 10);
      buf.writeUInt16LE(DOS_DATE, local + 12);
      at += 46 + buf.readUInt16LE(at + 28) + buf.readUInt16LE(at + 30) + buf.readUInt16LE(at + 32);
    }
    return buf;
  } catch {
    return input;
  }
}
