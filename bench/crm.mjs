#!/usr/bin/env node
// CRM env benchmark: SOQL latency on a ≥ 50k-record org, the cost of a per-rollout isolated org (an overlay of the
// rows a rollout changes, against a whole-org copy), ≥ 200 concurrent CRM rollouts and ≥ 1,000 concurrent writers
// (with RSS). Imports the built @benchmax/env-crm (run `npx tsup` in envs/crm first).
// Prints progress to stderr and one JSON line to stdout.
import { runMany } from "@benchmax/core";
import { clearSoqlCache, compileSoql, createCrmEnv, Org, runSoql } from "@benchmax/env-crm";

const log = (...a) => console.error("[crm]", ...a);
const now = () => performance.now();
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const round = (x, d = 3) => Number(x.toFixed(d));
const mb = (b) => round(b / 1024 / 1024, 1);
const figures = [];

let t0 = now();
const org = await Org.generate({ size: 50_000 });
const buildMs = now() - t0;
log(`org: ${org.totalRecords} records, ${mb(org.bytes.length)} MB, built in ${buildMs.toFixed(0)} ms`);
figures.push({
  id: "crm.org_records",
  label: "records in the benchmark org (orgSize=50000)",
  value: org.totalRecords,
  unit: "records",
  goal: ">= 50000",
  pass: org.totalRecords >= 50_000,
  note: `${mb(org.bytes.length)} MB SQLite image, generated in ${buildMs.toFixed(0)} ms`,
});

// ---- SOQL latency -------------------------------------------------------------------------------------------
const ids = org.shared.exec(`SELECT "Id" FROM "Account" ORDER BY "Id" LIMIT 200`)[0].values.map((r) => r[0]);
const agents = org.shared.exec(`SELECT "Id" FROM "User" ORDER BY "Id" LIMIT 50`)[0].values.map((r) => r[0]);
const templates = [
  (i) =>
    `SELECT Id, CaseNumber, Subject, Status FROM Case WHERE AccountId = '${ids[i % ids.length]}' ORDER BY CreatedDate DESC LIMIT 10`,
  (i) =>
    `SELECT Id, Subject, Account.Name, Owner.Name FROM Case WHERE OwnerId = '${agents[i % agents.length]}' AND Status = 'Closed' AND ClosedDate = LAST_N_DAYS:${30 + (i % 60)} LIMIT 20`,
  (i) => `SELECT COUNT() FROM Case WHERE OwnerId = '${agents[i % agents.length]}' AND IsClosed = false`,
  (i) => `SELECT Status, COUNT(Id) FROM Case WHERE AccountId = '${ids[i % ids.length]}' GROUP BY Status`,
  (i) =>
    `SELECT Id, Name, StageName, Amount FROM Opportunity WHERE AccountId = '${ids[i % ids.length]}' AND StageName IN ('Closed Won', 'Negotiation')`,
  (i) =>
    `SELECT Product2.Name, Quantity, TotalPrice FROM OrderItem WHERE Order.AccountId = '${ids[i % ids.length]}' LIMIT 20`,
  (i) =>
    `SELECT Id, Field__c, OldValue__c, NewValue__c FROM CaseHistory__c WHERE OldValue__c = '${agents[i % agents.length]}' AND CreatedDate = LAST_N_DAYS:${7 + (i % 20)} LIMIT 20`,
  (i) => `SELECT Id, Name, Email FROM Contact WHERE AccountId = '${ids[i % ids.length]}'`,
];
const N = 2000;
const queries = Array.from({ length: N }, (_, i) => templates[i % templates.length](i));
for (let i = 0; i < 200; i++) runSoql(org.shared, queries[i], org.today); // warm up
const cold = [];
for (let i = 0; i < N; i++) {
  clearSoqlCache(); // parse + translate every time
  const s = now();
  runSoql(org.shared, queries[i], org.today);
  cold.push(now() - s);
}
const warm = [];
for (let i = 0; i < N; i++) {
  const s = now();
  runSoql(org.shared, queries[i % 64], org.today);
  warm.push(now() - s);
}
// baseline: the same SQL statements run directly (no parsing, translation or shaping)
const compiled = queries.map((q) => compileSoql(q, org.today));
const raw = [];
for (let i = 0; i < N; i++) {
  const c = compiled[i];
  const s = now();
  const st = org.shared.prepare(c.sql);
  st.bind(c.params);
  while (st.step()) st.get();
  st.free();
  raw.push(now() - s);
}
const p50cold = pct(cold, 50);
log(
  `SOQL p50 ${p50cold.toFixed(3)} ms (p95 ${pct(cold, 95).toFixed(3)}), cached-translation p50 ${pct(warm, 50).toFixed(3)} ms, raw SQL p50 ${pct(raw, 50).toFixed(3)} ms`,
);
figures.push({
  id: "crm.soql_p50_ms",
  label: "SOQL query p50 (parse + translate + run + REST shaping; typical filtered/relationship/aggregate queries)",
  value: round(p50cold),
  unit: "ms",
  goal: "<= 1",
  pass: p50cold <= 1,
  baseline: { label: "the same SQL run directly on sql.js", value: round(pct(raw, 50)) },
  ratio: round(p50cold / pct(raw, 50), 2),
  note: `${N} distinct queries; p95 ${pct(cold, 95).toFixed(3)} ms; with cached translation p50 ${pct(warm, 50).toFixed(3)} ms`,
});

// ---- per-rollout isolated org ---------------------------------------------------------------------------------
const env = createCrmEnv({ org });
const tasks = await env.capabilities.tasks.loadTasks();
const initMs = [];
for (let i = 0; i < 300; i++) {
  const s = now();
  await env.init(`iso-${i}`, tasks[i % tasks.length]);
  initMs.push(now() - s);
}
const openCase = org.shared.exec(`SELECT "Id" FROM "Case" WHERE "IsClosed" = 0 LIMIT 1`)[0].values[0][0];
const firstWrite = [];
for (let i = 0; i < 40; i++) {
  const s = now();
  const r = await env.runTool(`iso-${i}`, {
    name: "update_record",
    arguments: { object: "Case", record_id: openCase, fields: { Status: "Escalated" } },
  });
  firstWrite.push(now() - s);
  if (r.isError) throw new Error(`write failed: ${r.content}`);
  if (
    runSoql(org.shared, `SELECT Status FROM Case WHERE Id = '${openCase}'`, org.today).records[0].Status === "Escalated"
  ) {
    throw new Error("a rollout's write reached the shared org");
  }
}
for (let i = 0; i < 300; i++) await env.release(`iso-${i}`);
const eager = [];
for (let i = 0; i < 40; i++) {
  const s = now();
  const db = org.copy();
  db.exec("SELECT 1");
  eager.push(now() - s);
  db.close();
}
const initP50 = pct(initMs, 50);
log(
  `init p50 ${initP50.toFixed(4)} ms; first write (overlay) p50 ${pct(firstWrite, 50).toFixed(3)} ms; whole-org copy p50 ${pct(eager, 50).toFixed(2)} ms`,
);
figures.push({
  id: "crm.rollout_init_ms",
  label: "per-rollout isolated org at init (copy-on-first-write session)",
  value: round(initP50, 4),
  unit: "ms",
  goal: "<= 5",
  pass: initP50 <= 5,
  baseline: { label: "eager private copy of the 50k org (new SQL.Database(bytes))", value: round(pct(eager, 50)) },
  ratio: round(initP50 / pct(eager, 50), 4),
  note: "reads share one connection; a rollout's writes are an overlay of the rows it changed",
});
figures.push({
  id: "crm.first_write_ms",
  label: "first write of a rollout (overlay of changed rows on the shared 50k org, then updates a Case)",
  value: round(pct(firstWrite, 50), 4),
  unit: "ms",
  goal: "<= 1",
  pass: pct(firstWrite, 50) <= 1,
  baseline: { label: "copy of the whole 50k org (the old copy-on-first-write cost)", value: round(pct(eager, 50)) },
  ratio: round(pct(firstWrite, 50) / pct(eager, 50), 4),
  note: `p95 first write ${pct(firstWrite, 95).toFixed(3)} ms`,
});

// ---- concurrent rollouts ------------------------------------------------------------------------------------------
const group = Math.ceil(240 / tasks.length);
const rssBefore = process.memoryUsage().rss;
let peak = rssBefore;
const sampler = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage().rss);
}, 20);
t0 = now();
const { results } = await runMany(env, tasks, env.capabilities.reference.referencePolicy(), {
  group,
  concurrency: 240,
  toolFormat: "openai",
});
const wall = now() - t0;
clearInterval(sampler);
peak = Math.max(peak, process.memoryUsage().rss);
const solved = results.filter((r) => r.reward === 1).length;
log(
  `${results.length} rollouts at concurrency 240 in ${wall.toFixed(0)} ms, ${solved} solved, RSS ${mb(rssBefore)} → peak ${mb(peak)} MB`,
);
figures.push({
  id: "crm.concurrent_rollouts",
  label: "CRM rollouts run concurrently (reference policy, 50k org)",
  value: results.length,
  unit: "rollouts",
  goal: ">= 200",
  pass: results.length >= 200 && solved === results.length,
  note: `${solved}/${results.length} scored 1; ${(results.length / (wall / 1000)).toFixed(0)} rollouts/s`,
});
figures.push({
  id: "crm.concurrent_peak_rss_mb",
  label: `peak RSS while ${results.length} CRM rollouts run concurrently`,
  value: mb(peak),
  unit: "MB",
  baseline: { label: "RSS before the rollouts (50k org loaded)", value: mb(rssBefore) },
  ratio: round(peak / rssBefore, 2),
});

// writers: 1,000 concurrent rollouts that each write (different Cases), all alive at once, each reading its own write
const WRITERS = 1000;
const caseIds = org.shared.exec(`SELECT "Id" FROM "Case" ORDER BY "Id" LIMIT ${WRITERS}`)[0].values.map((r) => r[0]);
// baseline: what one writer cost when its first write copied the whole org
const copies = [];
const cBefore = process.memoryUsage().rss;
for (let i = 0; i < 10; i++) copies.push(org.copy());
const perCopy = (process.memoryUsage().rss - cBefore) / 10;
for (const c of copies) c.close();
const wBefore = process.memoryUsage().rss;
let wPeak = wBefore;
const wSampler = setInterval(() => {
  wPeak = Math.max(wPeak, process.memoryUsage().rss);
}, 20);
for (let i = 0; i < WRITERS; i++) await env.init(`w-${i}`, tasks[0]);
const wStart = now();
await Promise.all(
  Array.from({ length: WRITERS }, async (_, i) => {
    const r = await env.runTool(`w-${i}`, {
      name: "update_record",
      arguments: { object: "Case", record_id: caseIds[i % caseIds.length], fields: { Subject: `writer ${i}` } },
    });
    if (r.isError) throw new Error(`write failed: ${r.content}`);
  }),
);
const writeWall = now() - wStart;
let isolated = 0;
await Promise.all(
  Array.from({ length: WRITERS }, async (_, i) => {
    const id = caseIds[i % caseIds.length];
    const r = await env.runTool(`w-${i}`, {
      name: "issue_soql_query",
      arguments: { query: `SELECT Subject FROM Case WHERE Id = '${id}'` },
    });
    const text = typeof r.content === "string" ? r.content : JSON.stringify(r.content);
    if (text.includes(`writer ${i}"`)) isolated++;
  }),
);
const shared0 = runSoql(org.shared, `SELECT Subject FROM Case WHERE Id = '${caseIds[0]}'`, org.today).records[0]
  .Subject;
if (shared0 === "writer 0") throw new Error("a rollout's write reached the shared org");
clearInterval(wSampler);
const wAfter = Math.max(wPeak, process.memoryUsage().rss);
for (let i = 0; i < WRITERS; i++) await env.release(`w-${i}`);
log(
  `${WRITERS} concurrent writing rollouts: RSS ${mb(wBefore)} → peak ${mb(wAfter)} MB (${isolated}/${WRITERS} read their own write); whole-org copy ${mb(perCopy)} MB per writer`,
);
figures.push({
  id: "crm.concurrent_writers",
  label: "concurrent writing rollouts on the 50k org, each seeing only its own write",
  value: isolated,
  unit: "rollouts",
  goal: ">= 1000",
  pass: isolated >= 1000,
  note: `${WRITERS} first writes issued at once finished in ${writeWall.toFixed(0)} ms (${(writeWall / WRITERS).toFixed(3)} ms each)`,
});
figures.push({
  id: "crm.concurrent_writers_rss_mb",
  label: `peak RSS with ${WRITERS} concurrent rollouts that have each written (overlays of changed rows)`,
  value: mb(wAfter),
  unit: "MB",
  goal: "<= 2048",
  pass: wAfter <= 2048 * 1024 * 1024,
  baseline: {
    label: `${WRITERS} whole-org copies (measured per copy × ${WRITERS})`,
    value: mb(wBefore + perCopy * WRITERS),
  },
  ratio: round(wAfter / (wBefore + perCopy * WRITERS), 4),
  note: `RSS before the writers ${mb(wBefore)} MB; ${mb((wAfter - wBefore) / WRITERS)} MB per writer vs ${mb(perCopy)} MB per whole-org copy`,
});

await env.close();
org.close();
console.log(JSON.stringify({ area: "crm", figures }));
