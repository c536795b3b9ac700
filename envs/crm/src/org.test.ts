import { describe, expect, it } from "vitest";
import { runSoql } from "./query-engine.js";
import { createRecord, updateRecord } from "./records.js";
import { fixtureOrg } from "./test-org.js";

const status = (db: Parameters<typeof runSoql>[0], id: string, today: string) =>
  runSoql(db, `SELECT Status FROM Case WHERE Id = '${id}'`, today).records[0]?.Status;

describe("per-rollout writes: an overlay of changed rows on the shared org", () => {
  it("isolates interleaved writers, at the cost of the rows they change", async () => {
    const org = await fixtureOrg();
    const [c1, c2] = org.shared.exec(`SELECT "Id", "Status" FROM "Case" WHERE "IsClosed" = 0 ORDER BY "Id" LIMIT 2`)[0]!
      .values as string[][];
    const id1 = c1![0]!;
    const id2 = c2![0]!;
    const before = c1![1]!;
    const a = org.session();
    const b = org.session();
    const reader = org.session();
    updateRecord(a, "Case", id1, { Status: "Escalated" });
    updateRecord(b, "Case", id1, { Status: "Working" });
    updateRecord(a, "Case", id2, { Priority: "Low" });
    updateRecord(a, "Case", id1, { Priority: "High" });
    expect(a.changedRows).toBe(2);
    expect(b.changedRows).toBe(1);
    expect(status(a.reader, id1, a.today)).toBe("Escalated");
    expect(status(b.reader, id1, b.today)).toBe("Working");
    expect(status(reader.reader, id1, reader.today)).toBe(before);
    expect(status(org.shared, id1, org.today)).toBe(before);
    // a's second write to id1 kept its first
    expect(runSoql(a.reader, `SELECT Status, Priority FROM Case WHERE Id = '${id1}'`, a.today).records[0]).toEqual({
      Status: "Escalated",
      Priority: "High",
    });
    // a fork starts from its parent's rows and then goes its own way
    const child = a.fork();
    updateRecord(child, "Case", id1, { Status: "Closed" });
    expect(status(child.reader, id1, child.today)).toBe("Closed");
    expect(status(a.reader, id1, a.today)).toBe("Escalated");
    // created records are the creator's alone
    const acc = org.shared.exec(`SELECT "Id" FROM "Account" LIMIT 1`)[0]!.values[0]![0] as string;
    const made = createRecord(b, "Case", { Subject: "overlay test", AccountId: acc, Status: "New" });
    expect(runSoql(b.reader, `SELECT COUNT() FROM Case WHERE Id = '${made.id}'`, b.today).totalSize).toBe(1);
    expect(runSoql(a.reader, `SELECT COUNT() FROM Case WHERE Id = '${made.id}'`, a.today).totalSize).toBe(0);
    for (const s of [a, b, child, reader]) s.release();
    expect(status(org.shared, id1, org.today)).toBe(before);
    expect(() => a.reader).toThrow(/released/);
  });

  it("a failed write leaves nothing behind", async () => {
    const org = await fixtureOrg();
    const id = org.shared.exec(`SELECT "Id" FROM "Case" LIMIT 1`)[0]!.values[0]![0] as string;
    const s = org.session();
    expect(() => updateRecord(s, "Case", id, { AccountId: "001Wt00000zzzzzAAA" })).toThrow(/no Account record/);
    expect(s.isPrivate).toBe(false);
    expect(s.changedRows).toBe(0);
    s.release();
  });

  it("carries each rollout's own today", async () => {
    const org = await fixtureOrg();
    expect(org.session().today).toBe(org.today);
    expect(org.session("2024-01-05").today).toBe("2024-01-05");
  });
});
