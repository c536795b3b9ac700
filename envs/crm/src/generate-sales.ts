import type { Database } from "sql.js";
import { formatDate, formatDateTime } from "./date-literals.js";
import type { Prng } from "./prng.js";

type Row = Record<string, string | number | null>;

export interface SalesContext {
  rng: Prng;
  insert(objName: string, row: Row): string;
  todayMs: number;
  startMs: number;
  agents: string[];
  first: readonly string[];
  last: readonly string[];
  companies: () => string;
}

const DAY = 86_400_000;
const LEAD_STATUS = ["Open - Not Contacted", "Working - Contacted", "Closed - Converted", "Closed - Not Converted"];
const QUOTE_STATUS = ["Draft", "Needs Review", "In Review", "Approved", "Rejected", "Presented", "Accepted", "Denied"];
const TASK_SUBJECT = ["Call", "Send Quote", "Follow up on proposal", "Schedule demo", "Email pricing"];
const BANT = ["Budget", "Authority", "Need", "Timeline"] as const;

function all(db: Database, sql: string): Row[] {
  const res = db.exec(sql)[0];
  if (!res) return [];
  return res.values.map((v) => Object.fromEntries(res.columns.map((c, i) => [c, v[i] as string | number | null])));
}

/**
 * The sales side of the org (the objects CRMArena-Pro's B2B tasks use): leads, contracts, quotes and their line
 * items, tasks, events and voice-call transcripts, derived from the accounts and opportunities already generated.
 * It draws from its own PRNG so the service data before it stays the same.
 */
export function generateSales(db: Database, ctx: SalesContext): void {
  const { rng, insert, todayMs, startMs, agents } = ctx;
  const when = (lo: number, hi: number) => lo + Math.floor(rng.next() * Math.max(1, hi - lo));
  const accounts = all(db, `SELECT "Id", "Name", "Industry", "BillingState" FROM "Account" ORDER BY "Id"`);
  const opps = all(
    db,
    `SELECT "Id", "Name", "AccountId", "ContactId", "OwnerId", "StageName", "CreatedDate", "CloseDate" FROM "Opportunity" ORDER BY "Id"`,
  );
  const lines = new Map<string, Row[]>();
  for (const l of all(
    db,
    `SELECT "Id", "OpportunityId", "Product2Id", "PricebookEntryId", "Quantity", "UnitPrice", "Discount" FROM "OpportunityLineItem" ORDER BY "Id"`,
  )) {
    const k = String(l.OpportunityId);
    if (!lines.has(k)) lines.set(k, []);
    lines.get(k)!.push(l);
  }

  let contractNo = 0;
  const contracted = new Set<string>();
  for (const o of opps) {
    const created = Date.parse(String(o.CreatedDate));
    if (o.StageName === "Closed Won" && !contracted.has(String(o.AccountId))) {
      contracted.add(String(o.AccountId));
      const start = Date.parse(`${o.CloseDate}T00:00:00Z`);
      insert("Contract", {
        ContractNumber: String(++contractNo).padStart(8, "0"),
        AccountId: o.AccountId,
        Status: start <= todayMs ? "Activated" : "Draft",
        StartDate: formatDate(start),
        ContractTerm: rng.pick([12, 24, 36]),
        CustomerSignedDate: formatDate(start - rng.int(1, 10) * DAY),
        CompanySignedDate: formatDate(start - rng.int(0, 3) * DAY),
        Description: `Contract for ${o.Name}`,
        CreatedDate: formatDateTime(start - 12 * DAY),
      });
    }
    if (["Proposal", "Negotiation", "Closed Won", "Closed Lost"].includes(String(o.StageName))) {
      const qCreated = created + rng.int(3, 20) * DAY;
      let total = 0;
      const quoteId = insert("Quote", {
        Name: `${o.Name} Quote`,
        OpportunityId: o.Id,
        AccountId: o.AccountId,
        ContactId: o.ContactId,
        Status: rng.pick(QUOTE_STATUS),
        Description: "Pricing proposal",
        ExpirationDate: formatDate(qCreated + 30 * DAY),
        TotalPrice: 0,
        CreatedDate: formatDateTime(Math.min(qCreated, todayMs - DAY)),
      });
      for (const l of lines.get(String(o.Id)) ?? []) {
        const discount = rng.pick([0, 5, 10, 15, 25]);
        const qty = Number(l.Quantity);
        const price = Number(l.UnitPrice);
        const lineTotal = Math.round(qty * price * (1 - discount / 100) * 100) / 100;
        total += lineTotal;
        insert("QuoteLineItem", {
          QuoteId: quoteId,
          OpportunityLineItemId: l.Id,
          Product2Id: l.Product2Id,
          PricebookEntryId: l.PricebookEntryId,
          Quantity: qty,
          UnitPrice: price,
          Discount: discount,
          TotalPrice: lineTotal,
          CreatedDate: formatDateTime(Math.min(qCreated, todayMs - DAY)),
        });
      }
      db.run(`UPDATE "Quote" SET "TotalPrice" = ? WHERE "Id" = ?`, [Math.round(total * 100) / 100, quoteId]);
    }
    const activity = when(created, todayMs);
    insert("Task", {
      Subject: rng.pick(TASK_SUBJECT),
      WhatId: o.Id,
      WhoId: o.ContactId,
      OwnerId: o.OwnerId,
      Status: activity < todayMs - 7 * DAY ? "Completed" : rng.pick(["Not Started", "In Progress"]),
      Priority: rng.pick(["High", "Normal", "Low"]),
      ActivityDate: formatDate(activity),
      Description: `Activity for ${o.Name}`,
      CreatedDate: formatDateTime(created),
    });
    if (rng.chance(0.35)) {
      insert("Event", {
        Subject: rng.pick(["Discovery meeting", "Product demo", "Negotiation call"]),
        WhatId: o.Id,
        WhoId: o.ContactId,
        OwnerId: o.OwnerId,
        StartDateTime: formatDateTime(activity),
        DurationInMinutes: rng.pick([30, 45, 60]),
        Location: "Video call",
        IsAllDayEvent: 0,
        Description: `Meeting about ${o.Name}`,
        CreatedDate: formatDateTime(created),
      });
    }
    if (rng.chance(0.5)) {
      const at = when(created, todayMs);
      insert("VoiceCallTranscript__c", {
        Name: `Call ${o.Name}`,
        OpportunityId__c: o.Id,
        LeadId__c: null,
        Body__c: `Rep: Thanks for your time on ${o.Name}. Customer: We are reviewing the proposal with our team.`,
        EndTime__c: formatDateTime(at + rng.int(5, 40) * 60_000),
        CreatedDate: formatDateTime(at),
      });
    }
  }

  const nLeads = Math.max(4, Math.round(accounts.length * 1.5));
  for (let i = 0; i < nLeads; i++) {
    const first = rng.pick(ctx.first);
    const last = rng.pick(ctx.last);
    const created = when(startMs, todayMs - DAY);
    const status = rng.pick(LEAD_STATUS);
    const converted = status === "Closed - Converted";
    const acc = converted ? rng.pick(accounts) : undefined;
    const company = acc ? String(acc.Name) : ctx.companies();
    const leadId = insert("Lead", {
      Name: `${first} ${last}`,
      FirstName: first,
      LastName: last,
      Company: company,
      Title: rng.pick(["VP Operations", "IT Director", "Procurement Manager", "CEO", "Analyst"]),
      Email: `${first}.${last}@lead${i}.example.com`.toLowerCase(),
      Phone: `(555) ${rng.int(200, 999)}-${String(rng.int(0, 9999)).padStart(4, "0")}`,
      Status: status,
      LeadSource: rng.pick(["Web", "Phone Inquiry", "Partner Referral", "Trade Show", "Advertisement"]),
      Industry: acc ? acc.Industry : rng.pick(["Technology", "Healthcare", "Retail", "Manufacturing", "Finance"]),
      State: acc ? acc.BillingState : rng.pick(["CA", "NY", "TX", "WA", "IL"]),
      OwnerId: rng.pick(agents),
      IsConverted: converted ? 1 : 0,
      ConvertedDate: converted ? formatDate(created + rng.int(5, 60) * DAY) : null,
      ConvertedAccountId: acc ? acc.Id : null,
      ConvertedContactId: null,
      ConvertedOpportunityId: null,
      CreatedDate: formatDateTime(created),
    });
    if (rng.chance(0.6)) {
      const unmet = BANT.filter(() => rng.chance(0.3));
      const at = when(created, todayMs);
      const said = BANT.map((b) =>
        unmet.includes(b) ? `${b}: not confirmed yet.` : `${b}: confirmed by the prospect.`,
      ).join(" ");
      insert("VoiceCallTranscript__c", {
        Name: `Call ${first} ${last}`,
        OpportunityId__c: null,
        LeadId__c: leadId,
        Body__c: `Rep: Thanks for taking my call, ${first}. ${said}`,
        EndTime__c: formatDateTime(at + rng.int(5, 30) * 60_000),
        CreatedDate: formatDateTime(at),
      });
    }
  }
}
