import type { CrmTask } from "./dataset.js";
import { idChecksum, to18 } from "./ids.js";
import type { Org } from "./org.js";
import { OBJECTS } from "./schema.js";

/** Key prefixes of standard objects CRMArena-Pro uses, for naming what an Id points at when the org lacks it. */
const KNOWN_PREFIX: Record<string, string> = {
  ...Object.fromEntries(OBJECTS.map((o) => [o.prefix, o.name])),
  "00Q": "Lead",
  "0Q0": "Quote",
  "0QL": "QuoteLineItem",
  "800": "Contract",
  "00T": "Task",
  "00U": "Event",
};

/** Object API names that are unambiguous in free text (compound or custom names; "Lead" or "Case" are not). */
const TEXT_NAMES = [
  ...new Set([
    ...OBJECTS.map((o) => o.name),
    "VoiceCallTranscript__c",
    "QuoteLineItem",
    "ProductCategory",
    "ProductCategoryProduct",
  ]),
].filter((n) => /__/.test(n) || /[a-z][A-Z0-9]/.test(n));

/** A Salesforce Id in text: 18 characters with a valid case checksum, or 15 with at least three digits. */
const ID_RE = /\b[0-9A-Za-z]{15}(?:[0-9A-Za-z]{3})?\b/g;

function idsIn(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(ID_RE)) {
    const s = m[0];
    if (s.length === 18 && idChecksum(s.slice(0, 15)) === s.slice(15)) out.push(s);
    else if (s.length === 15 && (s.match(/\d/g)?.length ?? 0) >= 3 && /[A-Za-z]/.test(s)) out.push(to18(s));
  }
  return out;
}

/** What checking a dataset against an org found. */
export interface TaskCheckReport {
  total: number;
  /** Tasks whose every referenced object and Id is in the org. */
  solvable: number;
  /** Tasks that reference an object or record the org lacks. */
  unsolvable: number;
  /** Missing object → how many tasks reference it. */
  missingObjects: Record<string, number>;
  /** Tasks that reference a record Id the org lacks (of an object it has). */
  missingIds: number;
  /** A few of the missing Ids. */
  exampleIds: string[];
  /** Ids of the first few unsolvable tasks. */
  exampleTasks: string[];
  /** The one-line summary (empty when every task is solvable). */
  summary: string;
}

/**
 * Check every task's referenced objects and record Ids against an org: the Ids in its prompt and gold answer (by
 * key prefix and by lookup) and the object names its text spells out. Gold answers are read here to validate a
 * dataset, never to answer a task.
 */
export function checkTasks(tasks: readonly CrmTask[], org: Org): TaskCheckReport {
  const prefixToObject = new Map<string, string>();
  for (const o of org.schema.objects.values()) if (o.prefix) prefixToObject.set(o.prefix, o.name);
  const db = org.shared;
  const has = (object: string) => org.schema.objects.has(object) && (org.counts[object] ?? 0) > 0;
  const idKnown = new Map<string, boolean>();
  const lookup = (object: string, id: string): boolean => {
    const key = `${object}\u0000${id}`;
    let v = idKnown.get(key);
    if (v === undefined) {
      v = db.exec(`SELECT 1 FROM "${object}" WHERE "Id" = ? LIMIT 1`, [id]).length > 0;
      idKnown.set(key, v);
    }
    return v;
  };
  const report: TaskCheckReport = {
    total: tasks.length,
    solvable: 0,
    unsolvable: 0,
    missingObjects: {},
    missingIds: 0,
    exampleIds: [],
    exampleTasks: [],
    summary: "",
  };
  for (const task of tasks) {
    const answers = task.groundTruth.answer.filter((a): a is string => typeof a === "string");
    const text = [task.prompt ?? "", ...answers].join("\n");
    const objects = new Set<string>();
    for (const name of TEXT_NAMES) if (new RegExp(`\\b${name}\\b`).test(text)) objects.add(name);
    let idMissing = false;
    for (const id of idsIn(text)) {
      const object = prefixToObject.get(id.slice(0, 3));
      if (!object) {
        objects.add(KNOWN_PREFIX[id.slice(0, 3)] ?? `objects with key prefix ${id.slice(0, 3)}`);
        continue;
      }
      objects.add(object);
      if (has(object) && !lookup(object, id)) {
        idMissing = true;
        if (report.exampleIds.length < 5 && !report.exampleIds.includes(id)) report.exampleIds.push(id);
      }
    }
    const missing = [...objects].filter((o) => !has(o));
    for (const o of missing) report.missingObjects[o] = (report.missingObjects[o] ?? 0) + 1;
    if (idMissing) report.missingIds++;
    if (missing.length || idMissing) {
      report.unsolvable++;
      if (report.exampleTasks.length < 5) report.exampleTasks.push(task.id);
    } else report.solvable++;
  }
  if (report.unsolvable > 0) {
    const fmt = (n: number) => n.toLocaleString("en-US");
    const parts = Object.entries(report.missingObjects)
      .sort((a, b) => b[1] - a[1])
      .map(([o, n]) => `${o} ×${fmt(n)}`);
    const detail = [
      parts.length ? `missing objects: ${parts.join(", ")}` : "",
      report.missingIds ? `${fmt(report.missingIds)} with record Ids not in the org, e.g. ${report.exampleIds[0]}` : "",
    ]
      .filter(Boolean)
      .join("; ");
    report.summary = `${fmt(report.unsolvable)} tasks reference objects not in this org: use --env-opt org=PATH or backend=live (${detail})`;
  }
  return report;
}
