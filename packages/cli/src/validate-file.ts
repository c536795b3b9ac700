import { DatasetError, UsageError, type ValidationReport, validateRows } from "@benchmax/core";

type Parse = (row: unknown, where: string) => unknown;

/**
 * Check every row of a dataset file (core's `validateRows`: malformed JSON lines and rows the env rejects alike,
 * each with its file:line). `maxErrors` 0 lists them all. An unreadable file is a usage error.
 */
export async function validateFile(path: string, parse: Parse, maxErrors = 0): Promise<ValidationReport> {
  try {
    return await validateRows(path, parse, maxErrors);
  } catch (e) {
    if (e instanceof DatasetError) throw new UsageError(`${path}: ${e.message.replace(`${path}: `, "")}`);
    throw e;
  }
}
