import { writeFile } from "node:fs/promises";
import { makeId } from "./ids.js";
import { loadSqlJs } from "./org.js";

/**
 * A tiny org in the layout CRMArena distributes its orgs (`local_data/crmarenapro_b2b_data.db`): a plain SQLite
 * file, one table per sObject named by its API name, one column per field, Salesforce REST value forms
 * (`2021-06-07T10:50:00.000+0000`, 18-character Ids), no Name column on person objects. Written by us for tests;
 * the fixture tasks in fixtures/crmarena-b2b-tasks.jsonl reference its records.
 */
export const FIXTURE_IDS = {
  users: [makeId("005", 101), makeId("005", 102), makeId("005", 103)],
  accounts: [makeId("001", 201), makeId("001", 202)],
  contacts: [makeId("003", 301), makeId("003", 302)],
  leads: [makeId("00Q", 401), makeId("00Q", 402), makeId("00Q", 403)],
  opps: [makeId("006", 501), makeId("006", 502)],
  quotes: [makeId("0Q0", 601)],
  quoteLines: [makeId("0QL", 701), makeId("0QL", 702)],
  products: [makeId("01t", 801), makeId("01t", 802)],
  calls: [makeId("a0X", 901), makeId("a0X", 902), makeId("a0X", 903)],
  cases: [makeId("500", 1001), makeId("500", 1002)],
  contracts: [makeId("800", 1101)],
  territories: [makeId("0MI", 1201)],
  assignments: [makeId("0R0", 1301), makeId("0R0", 1302)],
};

type V = string | number | null;

export async function crmArenaOrgFixtureBytes(): Promise<Uint8Array> {
  const SQL = await loadSqlJs();
  const db = new SQL.Database();
  const I = FIXTURE_IDS;
  const table = (name: string, cols: string, rows: V[][]) => {
    db.exec(`CREATE TABLE "${name}" (${cols})`);
    const n = cols.split(",").length;
    const st = db.prepare(`INSERT INTO "${name}" VALUES (${Array.from({ length: n }, () => "?").join(", ")})`);
    for (const r of rows) st.run(r);
    st.free();
  };
  table(
    "User",
    `"Id" TEXT, "FirstName" TEXT, "LastName" TEXT, "Email" TEXT, "Phone" TEXT, "Username" TEXT, "Alias" TEXT`,
    [
      [I.users[0]!, "Dana", "Reyes", "dana@b2b.example", "555-0101", "dana@b2b.example", "dreyes"],
      [I.users[1]!, "Omar", "Khan", "omar@b2b.example", "555-0102", "omar@b2b.example", "okhan"],
      [I.users[2]!, "Lena", "Park", "lena@b2b.example", "555-0103", "lena@b2b.example", "lpark"],
    ],
  );
  table(
    "Account",
    `"Id" TEXT, "Name" TEXT, "Phone" TEXT, "Industry" TEXT, "Description" TEXT, "NumberOfEmployees" INTEGER, "ShippingState" TEXT`,
    [
      [I.accounts[0]!, "Northwind Robotics", "555-0201", "Manufacturing", "Robot arms", 420, "OH"],
      [I.accounts[1]!, "Bluefin Analytics", "555-0202", "Technology", "Data platform", 85, "WA"],
    ],
  );
  table(`Contact`, `"Id" TEXT, "FirstName" TEXT, "LastName" TEXT, "Email" TEXT, "AccountId" TEXT`, [
    [I.contacts[0]!, "Ivy", "Chen", "ivy@northwind.example", I.accounts[0]!],
    [I.contacts[1]!, "Raj", "Patel", "raj@bluefin.example", I.accounts[1]!],
  ]);
  table(
    "Lead",
    `"Id" TEXT, "FirstName" TEXT, "LastName" TEXT, "Email" TEXT, "Phone" TEXT, "Company" TEXT, "Status" TEXT, "ConvertedContactId" TEXT, "ConvertedAccountId" TEXT, "Title" TEXT, "CreatedDate" TEXT, "ConvertedDate" TEXT, "IsConverted" INTEGER, "OwnerId" TEXT`,
    [
      [
        I.leads[0]!,
        "Sam",
        "Ortiz",
        "sam@acme.example",
        "555-0401",
        "Acme Tooling",
        "Working - Contacted",
        null,
        null,
        "CTO",
        "2023-03-02T15:04:00.000+0000",
        null,
        0,
        I.users[0]!,
      ],
      [
        I.leads[1]!,
        "Mia",
        "Novak",
        "mia@zenith.example",
        "555-0402",
        "Zenith Labs",
        "Open - Not Contacted",
        null,
        null,
        "Buyer",
        "2023-03-20T09:30:00.000+0000",
        null,
        0,
        I.users[1]!,
      ],
      [
        I.leads[2]!,
        "Ivy",
        "Chen",
        "ivy@northwind.example",
        "555-0403",
        "Northwind Robotics",
        "Closed - Converted",
        I.contacts[0]!,
        I.accounts[0]!,
        "COO",
        "2022-11-01T10:00:00.000+0000",
        "2022-12-01",
        1,
        I.users[0]!,
      ],
    ],
  );
  table("Product2", `"Id" TEXT, "Name" TEXT, "Description" TEXT, "IsActive" INTEGER, "External_ID__c" TEXT`, [
    [I.products[0]!, "Servo Controller X2", "Motion control board", 1, "SKU-X2"],
    [I.products[1]!, "Vision Kit", "Camera module", 1, "SKU-VK"],
  ]);
  table(
    "Opportunity",
    `"Id" TEXT, "ContractID__c" TEXT, "AccountId" TEXT, "ContactId" TEXT, "OwnerId" TEXT, "Probability" REAL, "Amount" REAL, "StageName" TEXT, "Name" TEXT, "Description" TEXT, "CreatedDate" TEXT, "CloseDate" TEXT`,
    [
      [
        I.opps[0]!,
        I.contracts[0]!,
        I.accounts[0]!,
        I.contacts[0]!,
        I.users[0]!,
        60,
        48000,
        "Quote",
        "Northwind arm refresh",
        "Refresh of 20 arms",
        "2023-01-10T12:00:00.000+0000",
        "2023-05-30",
      ],
      [
        I.opps[1]!,
        null,
        I.accounts[1]!,
        I.contacts[1]!,
        I.users[2]!,
        20,
        12000,
        "Discovery",
        "Bluefin pilot",
        "Pilot",
        "2023-02-14T08:00:00.000+0000",
        "2023-06-30",
      ],
    ],
  );
  table(
    "Quote",
    `"Id" TEXT, "OpportunityId" TEXT, "AccountId" TEXT, "ContactId" TEXT, "Name" TEXT, "Description" TEXT, "Status" TEXT, "CreatedDate" TEXT, "ExpirationDate" TEXT`,
    [
      [
        I.quotes[0]!,
        I.opps[0]!,
        I.accounts[0]!,
        I.contacts[0]!,
        "Northwind Q1",
        "Arms and kits",
        "Needs Review",
        "2023-03-01T16:20:00.000+0000",
        "2023-04-01",
      ],
    ],
  );
  table(
    "QuoteLineItem",
    `"Id" TEXT, "QuoteId" TEXT, "OpportunityLineItemId" TEXT, "Product2Id" TEXT, "PricebookEntryId" TEXT, "Quantity" REAL, "UnitPrice" REAL, "Discount" REAL, "TotalPrice" REAL`,
    [
      [I.quoteLines[0]!, I.quotes[0]!, null, I.products[0]!, null, 20, 2000, 10, 36000],
      [I.quoteLines[1]!, I.quotes[0]!, null, I.products[1]!, null, 4, 3000, 0, 12000],
    ],
  );
  table(
    "VoiceCallTranscript__c",
    `"Id" TEXT, "OpportunityId__c" TEXT, "LeadId__c" TEXT, "Body__c" TEXT, "CreatedDate" TEXT, "EndTime__c" TEXT`,
    [
      [
        I.calls[0]!,
        null,
        I.leads[0]!,
        "Rep: Do you own the budget? Sam: I need my CFO to sign off.",
        "2023-03-05T14:00:00.000+0000",
        "2023-03-05T14:20:00.000+0000",
      ],
      [
        I.calls[1]!,
        I.opps[0]!,
        null,
        "Rep: Shall we finalise the quote? Ivy: Send the revised pricing.",
        "2023-03-10T10:00:00.000+0000",
        "2023-03-10T10:30:00.000+0000",
      ],
      [
        I.calls[2]!,
        null,
        I.leads[1]!,
        "Rep: When do you plan to buy? Mia: Next quarter.",
        "2023-03-21 11:00:00",
        "2023-03-21 11:15:00",
      ],
    ],
  );
  table(
    "Case",
    `"Id" TEXT, "Priority" TEXT, "Subject" TEXT, "Description" TEXT, "Status" TEXT, "ContactId" TEXT, "CreatedDate" TEXT, "ClosedDate" TEXT, "OrderItemId__c" TEXT, "IssueId__c" TEXT, "AccountId" TEXT, "OwnerId" TEXT`,
    [
      [
        I.cases[0]!,
        "High",
        "Arm stalls",
        "Axis 3 stalls",
        "Closed",
        I.contacts[0]!,
        "2023-02-01T09:00:00.000+0000",
        "2023-02-03T17:00:00.000+0000",
        null,
        null,
        I.accounts[0]!,
        I.users[1]!,
      ],
      [
        I.cases[1]!,
        "Low",
        "Invoice copy",
        "Needs a copy",
        "New",
        I.contacts[1]!,
        "2023-03-22T09:00:00.000+0000",
        null,
        null,
        null,
        I.accounts[1]!,
        I.users[2]!,
      ],
    ],
  );
  table(
    "Contract",
    `"Id" TEXT, "AccountId" TEXT, "Status" TEXT, "StartDate" TEXT, "CustomerSignedDate" TEXT, "CompanySignedDate" TEXT, "Description" TEXT, "ContractTerm" INTEGER`,
    [[I.contracts[0]!, I.accounts[0]!, "Activated", "2022-06-01", "2022-05-20", "2022-05-21", "Support contract", 12]],
  );
  table(`Territory2`, `"Id" TEXT, "Name" TEXT, "Description" TEXT`, [[I.territories[0]!, "Midwest", "OH, MI, IL"]]);
  table(`UserTerritory2Association`, `"Id" TEXT, "UserId" TEXT, "Territory2Id" TEXT`, [
    [I.assignments[0]!, I.users[0]!, I.territories[0]!],
    [I.assignments[1]!, I.users[1]!, I.territories[0]!],
  ]);
  const bytes = db.export();
  db.close();
  return bytes;
}

/** Write the fixture org to a file (what `--env-opt org=PATH` reads). */
export async function writeCrmArenaOrgFixture(path: string): Promise<void> {
  await writeFile(path, await crmArenaOrgFixtureBytes());
}
