import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UsageError } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIXTURE_IDS, writeCrmArenaOrgFixture } from "./crmarena-org-fixture.js";
import { loadOrgFile } from "./load-org.js";
import type { Org } from "./org.js";
import { runSoql } from "./query-engine.js";
import { createRecord, updateRecord } from "./records.js";
import { isSfError } from "./sf-error.js";
import { runSosl } from "./sosl.js";

let dir: string;
let path: string;
let org: Org;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "crm-org-"));
  path = join(dir, "crmarenapro_b2b_data.db");
  await writeCrmArenaOrgFixture(path);
  org = await loadOrgFile(path);
});
afterAll(() => org.close());

const q = (soql: string) => runSoql(org.shared, soql, org.today, {}, org.schema);

describe("loading the benchmark's released org (SQLite, one table per sObject)", () => {
  it("loads every table as an object, Lead, Quote, QuoteLineItem and VoiceCallTranscript__c included", () => {
    expect(org.counts.Lead).toBe(3);
    expect(org.counts.Quote).toBe(1);
    expect(org.counts.QuoteLineItem).toBe(2);
    expect(org.counts.VoiceCallTranscript__c).toBe(3);
    expect(org.schema.object("voicecalltranscript__c")?.name).toBe("VoiceCallTranscript__c");
    // today defaults to the date of the latest CreatedDate in the org
    expect(org.today).toBe("2023-03-22");
  });

  it("answers SOQL with relationships the file never declared (inferred from Id prefixes)", () => {
    const r = q(
      `SELECT Body__c, LeadId__r.Company FROM VoiceCallTranscript__c WHERE LeadId__c = '${FIXTURE_IDS.leads[0]}'`,
    );
    expect(r.records).toEqual([
      {
        Body__c: "Rep: Do you own the budget? Sam: I need my CFO to sign off.",
        LeadId__r: { Company: "Acme Tooling" },
      },
    ]);
    const lines = q(
      `SELECT Id, Product2.Name, Discount FROM QuoteLineItem WHERE Quote.Name = 'Northwind Q1' AND Discount > 5`,
    );
    expect(lines.records).toEqual([
      { Id: FIXTURE_IDS.quoteLines[0], Product2: { Name: "Servo Controller X2" }, Discount: 10 },
    ]);
    // a column only the file has (not in the embedded schema)
    expect(q(`SELECT ShippingState FROM Account WHERE Name = 'Bluefin Analytics'`).records).toEqual([
      { ShippingState: "WA" },
    ]);
  });

  it("gives person objects their compound Name and keeps Salesforce value forms", () => {
    expect(q(`SELECT Name FROM User WHERE Alias = 'okhan'`).records).toEqual([{ Name: "Omar Khan" }]);
    expect(q(`SELECT IsConverted FROM Lead WHERE Id = '${FIXTURE_IDS.leads[2]}'`).records[0]).toEqual({
      IsConverted: true,
    });
    // a "2023-03-21 11:00:00" datetime is stored in the REST form, so date filters work on it
    const calls = q(`SELECT CreatedDate FROM VoiceCallTranscript__c WHERE CreatedDate > 2023-03-20T00:00:00Z`);
    expect(calls.records).toEqual([{ CreatedDate: "2023-03-21T11:00:00.000+0000" }]);
    expect(q(`SELECT COUNT() FROM Lead WHERE CreatedDate = LAST_N_DAYS:30`).totalSize).toBe(2);
  });

  it("refuses a field the file does not have with INVALID_FIELD", () => {
    try {
      q("SELECT CaseNumber FROM Case");
      expect.unreachable();
    } catch (e) {
      expect(isSfError(e) && e.errorCode).toBe("INVALID_FIELD");
    }
  });

  it("searches name fields with SOSL", () => {
    const r = runSosl(
      org.shared,
      "FIND {Zenith} IN ALL FIELDS RETURNING Lead(Id, Company)",
      org.today,
      200,
      org.schema,
    );
    expect(r.searchRecords.map((x) => x.Id)).toEqual([FIXTURE_IDS.leads[1]]);
  });

  it("writes to a loaded org stay in the rollout", () => {
    const a = org.session();
    const b = org.session();
    updateRecord(a, "Lead", FIXTURE_IDS.leads[1]!, { Status: "Working - Contacted" });
    const created = createRecord(a, "Quote", { Name: "Draft B", OpportunityId: FIXTURE_IDS.opps[1] });
    const status = (s: typeof a) =>
      runSoql(s.reader, `SELECT Status FROM Lead WHERE Id = '${FIXTURE_IDS.leads[1]}'`, s.today, {}, s.schema)
        .records[0];
    expect(status(a)).toEqual({ Status: "Working - Contacted" });
    expect(status(b)).toEqual({ Status: "Open - Not Contacted" });
    expect(q(`SELECT COUNT() FROM Quote WHERE Id = '${created.id}'`).totalSize).toBe(0);
    a.release();
    b.release();
  });

  it("names a file that is not a SQLite database", async () => {
    const bad = join(dir, "tasks.jsonl");
    await writeFile(bad, '{"idx": 0}\n');
    await expect(loadOrgFile(bad)).rejects.toThrow(UsageError);
    await expect(loadOrgFile(bad)).rejects.toThrow(/tasks\.jsonl is not a SQLite database/);
    await expect(loadOrgFile(join(dir, "missing.db"))).rejects.toThrow(/cannot read the org file .*missing\.db/);
  });
});
