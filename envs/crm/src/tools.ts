import { type Tool, ToolError, tool } from "@benchmax/core";
import { z } from "zod";
import { isValidDate } from "./date-literals.js";
import * as h from "./helpers.js";
import type { LiveOrg } from "./live.js";
import type { OrgSession } from "./org.js";
import { type ResultLimits, runSoql } from "./query-engine.js";
import { createRecord, updateRecord } from "./records.js";
import { isSfError } from "./sf-error.js";
import { runSosl } from "./sosl.js";

/** Per-rollout state of the CRM env. */
export interface CrmState {
  session: OrgSession;
  /** Who judged privacy_rejection for this rollout ("llm:<model>" | "heuristic"), set by the reward. */
  judgedBy?: string;
  /** SOQL/SOSL run through `<execute>` blocks of the final text (see execute-actions.ts). */
  executeActions?: number;
}

const id = z
  .string()
  .regex(/^[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?$/, "must be a 15- or 18-character Salesforce Id (letters and digits)");
const date = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "must be a date YYYY-MM-DD")
  .refine(isValidDate, "must be a real calendar date");
const month = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, "must be a month YYYY-MM");
const text = (max = 200) => z.string().min(1).max(max);
const limit = (dflt: number, max = 200) =>
  z.number().int().min(1).max(max).optional().describe(`default ${dflt}, at most ${max}`);
const caseStatus = z.string().min(1).max(40).describe("New, Working, Escalated or Closed");

/** Per-rollout state of the live backend. */
export interface LiveState {
  live: LiveOrg;
  judgedBy?: string;
}

/** Run a helper, turning Salesforce errors into tool errors shaped like the REST body. */
function sf<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (isSfError(e)) throw new ToolError(JSON.stringify(e.toJSON()));
    throw e;
  }
}

async function sfAsync<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isSfError(e)) throw new ToolError(JSON.stringify(e.toJSON()));
    throw e;
  }
}

const SOQL_DESCRIPTION =
  "Run a SOQL query (SELECT only) on the Salesforce org and get the REST result {totalSize, done, records}. Supports relationship fields (Account.Name, Owner.Name), WHERE with AND/OR/NOT, LIKE, IN, date literals (TODAY, LAST_N_DAYS:n, THIS_MONTH, …), ORDER BY, LIMIT/OFFSET, COUNT()/SUM/AVG/MIN/MAX with GROUP BY, and semi-joins (Id IN (SELECT …)).";
const SOSL_DESCRIPTION =
  "Run a SOSL search: FIND {term} [IN ALL FIELDS | IN NAME FIELDS | IN EMAIL FIELDS | IN PHONE FIELDS] [RETURNING Object(field, … [WHERE …] [LIMIT n]), …]. Returns {searchRecords}.";

/** The tools of the live backend: SOQL and SOSL against a real org. */
export function liveTools(limits: ResultLimits = {}): Tool<LiveState, any>[] {
  return [
    tool<LiveState, z.ZodObject<{ query: z.ZodString }>>({
      name: "issue_soql_query",
      description: SOQL_DESCRIPTION,
      parameters: z.object({ query: text(10_000).describe("the SOQL query") }),
      execute: (a, { state }) => sfAsync(() => state.live.query(a.query, limits.maxRecords)),
    }),
    tool<LiveState, z.ZodObject<{ search: z.ZodString }>>({
      name: "issue_sosl_query",
      description: SOSL_DESCRIPTION,
      parameters: z.object({ search: text(4_000).describe("the SOSL search") }),
      execute: (a, { state }) => sfAsync(() => state.live.search(a.search, limits.maxRecords)),
    }),
  ];
}

/** Check a date range's order; returns the arguments. */
function range<A extends { start_date: string; end_date: string }>(a: A): A {
  if (a.start_date > a.end_date) throw new ToolError(`start_date ${a.start_date} is after end_date ${a.end_date}`);
  return a;
}

export function crmTools(limits: ResultLimits = {}): Tool<CrmState, any>[] {
  // a helper written for the embedded schema meets a loaded org that lacks its table or column: a tool error
  // the agent can read (SOQL still works), not a crash
  const t = <P extends z.ZodType>(x: Tool<CrmState, P>) =>
    tool<CrmState, P>({
      ...x,
      execute: (a, ctx) => {
        try {
          return x.execute(a, ctx);
        } catch (e) {
          const m = e instanceof Error ? /^no such (table|column): (\S+)/.exec(e.message) : null;
          if (m) {
            throw new ToolError(
              `${x.name} is not available on this org (it has no ${m[1]} ${m[2]}); use issue_soql_query instead`,
            );
          }
          throw e;
        }
      },
    });
  return [
    t({
      name: "issue_soql_query",
      description: SOQL_DESCRIPTION,
      parameters: z.object({ query: text(10_000).describe("the SOQL query") }),
      execute: (a, { state }) =>
        sf(() => runSoql(state.session.reader, a.query, state.session.today, limits, state.session.schema)),
    }),
    t({
      name: "issue_sosl_query",
      description: SOSL_DESCRIPTION,
      parameters: z.object({ search: text(4_000).describe("the SOSL search") }),
      execute: (a, { state }) =>
        sf(() => runSosl(state.session.reader, a.search, state.session.today, limits.maxRecords, state.session.schema)),
    }),
    t({
      name: "get_cases_by_date_range",
      description: "Cases created between two dates (inclusive), optionally with one status.",
      parameters: z.object({ start_date: date, end_date: date, status: caseStatus.optional(), limit: limit(50) }),
      execute: (a, { state }) => h.casesByDateRange(state.session.reader, range(a)),
    }),
    t({
      name: "get_cases_by_agent",
      description: "Cases owned by an agent (User Id), optionally filtered by status and creation date range.",
      parameters: z.object({
        agent_id: id,
        status: caseStatus.optional(),
        start_date: date.optional(),
        end_date: date.optional(),
        limit: limit(50),
      }),
      execute: (a, { state }) => h.casesByAgent(state.session.reader, a),
    }),
    t({
      name: "get_cases_by_status",
      description: "Cases with a status, newest first, with the total count.",
      parameters: z.object({ status: caseStatus, limit: limit(50) }),
      execute: (a, { state }) => h.casesByStatus(state.session.reader, a),
    }),
    t({
      name: "get_case_details",
      description: "One case (by Id or CaseNumber) with its account, contact, owner, issue and product names.",
      parameters: z.object({ case_id: text(40).describe("Case Id or CaseNumber") }),
      execute: (a, { state }) => h.caseDetails(state.session.reader, a) ?? { found: false },
    }),
    t({
      name: "get_case_history",
      description: "The history of a case (CaseHistory__c): creation, owner assignments (transfers), closure.",
      parameters: z.object({ case_id: id }),
      execute: (a, { state }) => h.caseHistory(state.session.reader, a),
    }),
    t({
      name: "get_agents_with_most_transfers",
      description:
        "Agents ranked by how many cases they transferred to another agent (Owner Assignment history rows, counted for the previous owner) in a date range.",
      parameters: z.object({ start_date: date, end_date: date, limit: limit(10, 100) }),
      execute: (a, { state }) => h.agentsWithMostTransfers(state.session.reader, range(a)),
    }),
    t({
      name: "get_agent_handle_times",
      description:
        "Average handle time (hours from creation to closure) per owning agent over cases closed in a date range, fastest first.",
      parameters: z.object({
        start_date: date,
        end_date: date,
        min_cases: z.number().int().min(1).max(1000).optional(),
      }),
      execute: (a, { state }) => h.agentHandleTimes(state.session.reader, range(a)),
    }),
    t({
      name: "get_average_handle_time",
      description: "Average handle time (hours) of cases closed in a date range, for one agent or for everyone.",
      parameters: z.object({ start_date: date, end_date: date, agent_id: id.optional() }),
      execute: (a, { state }) => h.averageHandleTime(state.session.reader, range(a)),
    }),
    t({
      name: "get_order_items_for_account",
      description: "Every order item of an account's orders, with product, quantity and prices.",
      parameters: z.object({ account_id: id }),
      execute: (a, { state }) => h.orderItemsForAccount(state.session.reader, a),
    }),
    t({
      name: "search_knowledge_articles",
      description: "Search Knowledge articles (Title, Summary, FAQ answer) by keywords; best matches first.",
      parameters: z.object({ query: text(500), limit: limit(5, 20) }),
      execute: (a, { state }) => h.searchKnowledge(state.session.reader, a),
    }),
    t({
      name: "get_month_over_month_case_counts",
      description:
        "Cases created per month between two months (YYYY-MM, inclusive), optionally for one product or issue, with the change from the previous month.",
      parameters: z.object({
        start_month: month,
        end_month: month,
        product_id: id.optional(),
        issue_id: id.optional(),
      }),
      execute: (a, { state }) => {
        if (a.start_month > a.end_month)
          throw new ToolError(`start_month ${a.start_month} is after end_month ${a.end_month}`);
        return h.monthOverMonthCaseCounts(state.session.reader, a);
      },
    }),
    t({
      name: "get_top_products_by_revenue",
      description:
        "Products ranked by ordered revenue (sum of OrderItem.TotalPrice), optionally for orders effective in a date range.",
      parameters: z.object({ start_date: date.optional(), end_date: date.optional(), limit: limit(5, 100) }),
      execute: (a, { state }) => h.topProductsByRevenue(state.session.reader, a),
    }),
    t({
      name: "get_top_issues",
      description: "Issues (Issue__c) ranked by number of cases, optionally for one product and a creation date range.",
      parameters: z.object({
        product_id: id.optional(),
        start_date: date.optional(),
        end_date: date.optional(),
        limit: limit(5, 50),
      }),
      execute: (a, { state }) => h.topIssues(state.session.reader, a),
    }),
    t({
      name: "find_accounts",
      description: "Accounts whose name contains the text.",
      parameters: z.object({ name: text(), limit: limit(20) }),
      execute: (a, { state }) => h.findAccounts(state.session.reader, a),
    }),
    t({
      name: "find_contacts",
      description: "Contacts by (part of) name, account and/or exact email.",
      parameters: z.object({
        name: text().optional(),
        account_id: id.optional(),
        email: text().optional(),
        limit: limit(20),
      }),
      execute: (a, { state }) => h.findContacts(state.session.reader, a),
    }),
    t({
      name: "find_agents",
      description: "Users (agents) by (part of) name and/or department (Support, Sales).",
      parameters: z.object({ name: text().optional(), department: text(40).optional(), limit: limit(50) }),
      execute: (a, { state }) => h.findAgents(state.session.reader, a),
    }),
    t({
      name: "get_opportunities_for_account",
      description: "Opportunities of an account, optionally in one stage.",
      parameters: z.object({ account_id: id, stage: text(40).optional() }),
      execute: (a, { state }) => h.opportunitiesForAccount(state.session.reader, a),
    }),
    t({
      name: "get_live_chat_transcripts",
      description: "Live chat transcripts by case and/or agent and/or start-date range.",
      parameters: z.object({
        case_id: id.optional(),
        agent_id: id.optional(),
        start_date: date.optional(),
        end_date: date.optional(),
        limit: limit(20, 100),
      }),
      execute: (a, { state }) => h.liveChatTranscripts(state.session.reader, a),
    }),
    t({
      name: "get_emails_for_case",
      description: "Email messages of a case, oldest first.",
      parameters: z.object({ case_id: id }),
      execute: (a, { state }) => h.emailsForCase(state.session.reader, a),
    }),
    t({
      name: "get_agent_territories",
      description: "The territories (Territory2) an agent is assigned to.",
      parameters: z.object({ agent_id: id }),
      execute: (a, { state }) => h.agentTerritories(state.session.reader, a),
    }),
    t({
      name: "get_region_closure_times",
      description:
        "Average case closure time (hours) by the account's billing state for cases closed in a date range, fastest first.",
      parameters: z.object({ start_date: date, end_date: date }),
      execute: (a, { state }) => h.regionClosureTimes(state.session.reader, range(a)),
    }),
    t({
      name: "get_case_counts_by_agent",
      description: "Number of cases created in a date range per owning agent, most first, optionally with one status.",
      parameters: z.object({ start_date: date, end_date: date, status: caseStatus.optional() }),
      execute: (a, { state }) => h.caseCountsByAgent(state.session.reader, range(a)),
    }),
    t({
      name: "update_record",
      description:
        "Update fields of one record (e.g. a Case's Status or OwnerId). Only Account, Contact, Case, Opportunity, OpportunityLineItem, Order, OrderItem, Lead, Quote and QuoteLineItem are writable; changes stay in this session.",
      parameters: z.object({
        object: text(80),
        record_id: id,
        fields: z.record(z.string().min(1).max(80), z.union([z.string(), z.number(), z.boolean(), z.null()])),
      }),
      execute: (a, { state }) => sf(() => updateRecord(state.session, a.object, a.record_id, a.fields)),
    }),
    t({
      name: "create_record",
      description: "Create a record of a writable object (Account, Contact, Case, Opportunity, …); returns its Id.",
      parameters: z.object({
        object: text(80),
        fields: z.record(z.string().min(1).max(80), z.union([z.string(), z.number(), z.boolean(), z.null()])),
      }),
      execute: (a, { state }) => sf(() => createRecord(state.session, a.object, a.fields)),
    }),
  ];
}
