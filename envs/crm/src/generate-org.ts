import type { Database } from "sql.js";
import { generateSales } from "./generate-sales.js";
import { makeId } from "./ids.js";
import { Prng } from "./prng.js";
import { OBJECTS, SCHEMA, schemaDdl } from "./schema.js";

/** Options of the deterministic org generator. */
export interface GenerateOrgOptions {
  /** Approximate number of records in all (default 2,000: the fixture org). */
  size?: number;
  /** PRNG seed (default 42). */
  seed?: number;
  /** The org's "today" (YYYY-MM-DD, UTC); data spans the two years before it. Default 2025-06-15. */
  today?: string;
}

export const DEFAULT_TODAY = "2025-06-15";

const FIRST = [
  "Olivia",
  "Liam",
  "Emma",
  "Noah",
  "Ava",
  "Elijah",
  "Sophia",
  "James",
  "Isabella",
  "Lucas",
  "Mia",
  "Mateo",
  "Amelia",
  "Ethan",
  "Harper",
  "Daniel",
  "Evelyn",
  "Henry",
  "Abigail",
  "Jack",
  "Emily",
  "Samuel",
  "Ella",
  "Owen",
  "Grace",
  "Leo",
  "Chloe",
  "Aiden",
  "Nora",
  "Wyatt",
  "Priya",
  "Ravi",
  "Mei",
  "Kenji",
  "Fatima",
  "Omar",
  "Sofia",
  "Diego",
  "Hana",
  "Yusuf",
] as const;
const LAST = [
  "Smith",
  "Johnson",
  "Williams",
  "Brown",
  "Jones",
  "Garcia",
  "Miller",
  "Davis",
  "Rodriguez",
  "Martinez",
  "Lopez",
  "Wilson",
  "Anderson",
  "Thomas",
  "Taylor",
  "Moore",
  "Jackson",
  "Martin",
  "Lee",
  "Thompson",
  "White",
  "Harris",
  "Clark",
  "Lewis",
  "Walker",
  "Young",
  "Allen",
  "King",
  "Wright",
  "Scott",
  "Patel",
  "Nguyen",
  "Kim",
  "Chen",
  "Singh",
  "Okafor",
  "Rossi",
  "Novak",
  "Sato",
  "Haddad",
] as const;
const CO_A = [
  "Acme",
  "Blue",
  "Summit",
  "Pioneer",
  "Vertex",
  "Nimbus",
  "Cedar",
  "Harbor",
  "Quantum",
  "Silver",
  "Golden",
  "Northern",
  "Bright",
  "Crimson",
  "Evergreen",
  "Falcon",
  "Granite",
  "Horizon",
  "Ironwood",
  "Juniper",
  "Keystone",
  "Lumen",
  "Maple",
  "Orion",
  "Prairie",
  "Redwood",
  "Sterling",
  "Titan",
  "Union",
  "Willow",
] as const;
const CO_B = [
  "Dynamics",
  "Systems",
  "Labs",
  "Holdings",
  "Partners",
  "Logistics",
  "Health",
  "Foods",
  "Energy",
  "Retail",
  "Robotics",
  "Media",
  "Analytics",
  "Outfitters",
  "Works",
  "Networks",
  "Capital",
  "Studios",
  "Supply",
  "Motors",
] as const;
const CO_C = ["Inc", "LLC", "Corp", "Group", "Co"] as const;
const INDUSTRY = [
  "Technology",
  "Healthcare",
  "Retail",
  "Manufacturing",
  "Finance",
  "Energy",
  "Education",
  "Media",
] as const;
const ACCOUNT_TYPE = ["Customer - Direct", "Customer - Channel", "Prospect", "Partner"] as const;
const STATES: ReadonlyArray<readonly [string, string, string]> = [
  ["CA", "San Francisco", "West"],
  ["CA", "Los Angeles", "West"],
  ["WA", "Seattle", "West"],
  ["OR", "Portland", "West"],
  ["NY", "New York", "Northeast"],
  ["MA", "Boston", "Northeast"],
  ["PA", "Philadelphia", "Northeast"],
  ["TX", "Austin", "South"],
  ["TX", "Houston", "South"],
  ["FL", "Miami", "South"],
  ["GA", "Atlanta", "South"],
  ["IL", "Chicago", "Midwest"],
  ["OH", "Columbus", "Midwest"],
  ["MN", "Minneapolis", "Midwest"],
  ["CO", "Denver", "Mountain"],
  ["AZ", "Phoenix", "Mountain"],
];
const TERRITORIES = ["West", "Northeast", "South", "Midwest", "Mountain"] as const;
const PRODUCT_ADJ = ["Smart", "Pro", "Ultra", "Eco", "Quantum", "Nano", "Turbo", "Aero", "Flex", "Prime"] as const;
const PRODUCT_NOUN = [
  "Thermostat",
  "Router",
  "Speaker",
  "Camera",
  "Headphones",
  "Monitor",
  "Keyboard",
  "Drone",
  "Watch",
  "Tablet",
  "Printer",
  "Projector",
  "Scanner",
  "Charger",
  "Blender",
] as const;
const FAMILY = ["Hardware", "Software", "Services", "Accessories"] as const;
const ISSUES: ReadonlyArray<readonly [string, string]> = [
  ["Battery drains quickly", "The device battery loses charge much faster than the rated battery life."],
  ["Device will not power on", "The device shows no sign of power when the power button is pressed."],
  ["Connectivity drops", "The device loses its Wi-Fi or Bluetooth connection intermittently."],
  ["Firmware update fails", "A firmware update stops part-way or leaves the device unresponsive."],
  ["Screen flickering", "The display flickers or shows lines during normal use."],
  ["Overheating", "The device becomes hot to the touch during ordinary operation."],
  ["Billing discrepancy", "The customer was charged an amount different from the quoted price."],
  ["Shipping delay", "The order did not arrive within the promised delivery window."],
  ["Missing parts", "The package arrived without all of the listed components."],
  ["App login problem", "The companion app rejects valid credentials or loops at sign-in."],
  ["Noise or rattling", "The device makes unusual noises while running."],
  ["Warranty claim", "The customer requests repair or replacement under warranty."],
];
const CASE_STATUS_OPEN = ["New", "Working", "Escalated"] as const;
const PRIORITY = ["Low", "Medium", "High", "Critical"] as const;
const ORIGIN = ["Email", "Phone", "Web", "Chat"] as const;
const STAGES = [
  "Prospecting",
  "Qualification",
  "Needs Analysis",
  "Proposal",
  "Negotiation",
  "Closed Won",
  "Closed Lost",
] as const;
const STAGE_PROB: Record<string, number> = {
  Prospecting: 10,
  Qualification: 20,
  "Needs Analysis": 30,
  Proposal: 60,
  Negotiation: 80,
  "Closed Won": 100,
  "Closed Lost": 0,
};
const LEAD_SOURCE = ["Web", "Phone Inquiry", "Partner Referral", "Trade Show", "Advertisement"] as const;
const KNOWLEDGE_TOPICS: ReadonlyArray<readonly [string, (p: string, n: number) => string]> = [
  [
    "How to reset the {p}",
    (p, n) =>
      `To reset the ${p}, hold the power button for ${n} seconds until the light blinks, then release it and wait for the device to restart.`,
  ],
  [
    "Warranty coverage for the {p}",
    (p, n) =>
      `The ${p} is covered by a ${n} month limited warranty that includes parts and labour for manufacturing defects.`,
  ],
  [
    "Return policy for the {p}",
    (p, n) =>
      `An unopened ${p} can be returned within ${n} days of delivery for a full refund; opened items carry a restocking fee.`,
  ],
  [
    "Updating the firmware of the {p}",
    (p, n) =>
      `Open the companion app, select the ${p}, choose Settings then Firmware, and keep the device charged above ${n} percent during the update.`,
  ],
  [
    "Battery care for the {p}",
    (p, n) =>
      `Charge the ${p} fully before first use and avoid temperatures above ${n} degrees to keep the battery healthy.`,
  ],
];

function pad(n: number, w = 2): string {
  return String(n).padStart(w, "0");
}

/** A UTC datetime in Salesforce REST form: `2025-06-15T12:00:00.000+0000`. */
export function sfDateTime(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.000+0000`;
}

export function sfDate(ms: number): string {
  return sfDateTime(ms).slice(0, 10);
}

const DAY = 86_400_000;

interface Row {
  [field: string]: string | number | null;
}

/**
 * Build the org into an empty sql.js database, deterministically from the seed: the same options give the same
 * bytes. Returns the number of records per object.
 */
export function generateOrg(db: Database, options: GenerateOrgOptions = {}): Record<string, number> {
  const size = Math.max(200, options.size ?? 2000);
  const rng = new Prng(options.seed ?? 42);
  const today = options.today ?? DEFAULT_TODAY;
  const todayMs = Date.parse(`${today}T00:00:00Z`);
  if (!Number.isFinite(todayMs)) throw new Error(`generateOrg: today must be YYYY-MM-DD, got "${today}"`);
  const startMs = todayMs - 730 * DAY;
  const nAccounts = Math.max(6, Math.round(size / 32));
  const nUsers = Math.min(200, 8 + Math.round(nAccounts / 12));
  const nProducts = Math.min(300, 12 + Math.round(nAccounts / 10));

  db.exec(schemaDdl());
  const counters = new Map<string, number>();
  const stmts = new Map<string, ReturnType<Database["prepare"]>>();
  const counts: Record<string, number> = {};
  function insert(objName: string, row: Row): string {
    const obj = SCHEMA.objects.get(objName)!;
    const n = (counters.get(objName) ?? 0) + 1;
    counters.set(objName, n);
    const recId = makeId(obj.prefix, n);
    let st = stmts.get(objName);
    if (!st) {
      const cols = obj.fields.map((x) => `"${x.name}"`).join(", ");
      st = db.prepare(`INSERT INTO "${objName}" (${cols}) VALUES (${obj.fields.map(() => "?").join(", ")})`);
      stmts.set(objName, st);
    }
    st.run(obj.fields.map((x) => (x.name === "Id" ? recId : (row[x.name] ?? null))));
    counts[objName] = n;
    return recId;
  }
  const when = (lo: number, hi: number) => lo + Math.floor(rng.next() * Math.max(1, hi - lo));
  const email = (first: string, last: string, domain: string) =>
    `${first}.${last}@${domain}`.toLowerCase().replace(/[^a-z0-9.@-]/g, "");

  db.exec("BEGIN");
  // Agents and territories
  const territories = TERRITORIES.map((t) =>
    insert("Territory2", { Name: t, Description: `${t} sales and service region`, CreatedDate: sfDateTime(startMs) }),
  );
  const agents: string[] = [];
  const agentSpeed: number[] = [];
  const agentTerritory: number[] = [];
  const usedUserNames = new Set<string>();
  for (let i = 0; i < nUsers; i++) {
    let first = rng.pick(FIRST);
    let last = rng.pick(LAST);
    for (let k = 0; usedUserNames.has(`${first} ${last}`) && k < 20; k++) {
      first = rng.pick(FIRST);
      last = rng.pick(LAST);
    }
    usedUserNames.add(`${first} ${last}`);
    const support = i % 5 !== 4;
    const uid = insert("User", {
      Name: `${first} ${last}`,
      FirstName: first,
      LastName: last,
      Email: email(first, last, "example-org.com"),
      Phone: `(555) ${rng.int(200, 999)}-${pad(rng.int(0, 9999), 4)}`,
      Alias: (first.slice(0, 1) + last.slice(0, 4)).toLowerCase(),
      Title: support ? rng.pick(["Support Agent", "Senior Support Agent"]) : "Account Executive",
      Department: support ? "Support" : "Sales",
      IsActive: 1,
      CreatedDate: sfDateTime(startMs - rng.int(30, 300) * DAY),
    });
    agents.push(uid);
    agentSpeed.push(6 + rng.next() * 90); // mean handle time in hours
    const t = i % territories.length;
    agentTerritory.push(t);
    insert("UserTerritory2Association", {
      UserId: uid,
      Territory2Id: territories[t]!,
      RoleInTerritory2: support ? "Service Agent" : "Sales Rep",
      CreatedDate: sfDateTime(startMs),
    });
  }
  // Products and price books
  const std = insert("Pricebook2", {
    Name: "Standard Price Book",
    Description: "List prices",
    IsActive: 1,
    IsStandard: 1,
    CreatedDate: sfDateTime(startMs),
  });
  insert("Pricebook2", {
    Name: "Partner Price Book",
    Description: "Partner discounts",
    IsActive: 1,
    IsStandard: 0,
    CreatedDate: sfDateTime(startMs),
  });
  const products: Array<{ id: string; name: string; price: number; entry: string }> = [];
  const usedProducts = new Set<string>();
  for (let i = 0; i < nProducts; i++) {
    let name = `${rng.pick(PRODUCT_ADJ)} ${rng.pick(PRODUCT_NOUN)} ${rng.int(1, 9) * 100}`;
    while (usedProducts.has(name)) name = `${name}X`;
    usedProducts.add(name);
    const price = rng.int(2, 200) * 10 - 0.01;
    const pid = insert("Product2", {
      Name: name,
      ProductCode: `PRD-${pad(i + 1, 4)}`,
      Family: rng.pick(FAMILY),
      Description: `${name}: ${rng.pick(["compact", "connected", "rugged", "energy-saving"])} model.`,
      IsActive: 1,
      CreatedDate: sfDateTime(startMs - rng.int(1, 100) * DAY),
    });
    const entry = insert("PricebookEntry", {
      Name: name,
      Pricebook2Id: std,
      Product2Id: pid,
      UnitPrice: price,
      IsActive: 1,
      CreatedDate: sfDateTime(startMs),
    });
    products.push({ id: pid, name, price, entry });
  }
  // Issues and knowledge
  const issues = ISSUES.map(([name, desc]) =>
    insert("Issue__c", { Name: name, IssueDescription__c: desc, CreatedDate: sfDateTime(startMs) }),
  );
  const nArticles = Math.min(products.length * KNOWLEDGE_TOPICS.length, 15 + Math.round(nAccounts / 4));
  for (let i = 0; i < nArticles; i++) {
    const p = products[i % products.length]!;
    const [title, answer] = KNOWLEDGE_TOPICS[Math.floor(i / products.length) % KNOWLEDGE_TOPICS.length]!;
    const n = rng.int(3, 30);
    const t = title.replace("{p}", p.name);
    insert("Knowledge__kav", {
      Title: t,
      UrlName: t.toLowerCase().replace(/[^a-z0-9]+/g, "-"),
      Summary: `${t}.`,
      FAQ_Answer__c: answer(p.name, n),
      PublishStatus: "Online",
      CreatedDate: sfDateTime(when(startMs, todayMs)),
    });
  }
  // Accounts, contacts, opportunities, orders, cases
  const usedAccounts = new Set<string>();
  const hist = (caseId: string, field: string, oldV: string | null, newV: string | null, ms: number) =>
    insert("CaseHistory__c", {
      Name: `${field}`,
      CaseId__c: caseId,
      Field__c: field,
      OldValue__c: oldV,
      NewValue__c: newV,
      CreatedDate: sfDateTime(ms),
    });
  let caseNo = 1000;
  let orderNo = 100;
  let orderItemNo = 1000;
  for (let a = 0; a < nAccounts; a++) {
    let name = `${rng.pick(CO_A)} ${rng.pick(CO_B)} ${rng.pick(CO_C)}`;
    for (let k = 2; usedAccounts.has(name); k++) name = `${name.replace(/ \d+$/, "")} ${k}`;
    usedAccounts.add(name);
    const [state, city, region] = rng.pick(STATES);
    const owner = rng.pick(agents);
    const domain = `${name.split(" ")[0]!.toLowerCase()}${a}.example.com`;
    const acc = insert("Account", {
      Name: name,
      Industry: rng.pick(INDUSTRY),
      Type: rng.pick(ACCOUNT_TYPE),
      BillingCity: city,
      BillingState: state,
      BillingCountry: "USA",
      Phone: `(555) ${rng.int(200, 999)}-${pad(rng.int(0, 9999), 4)}`,
      AnnualRevenue: rng.int(1, 500) * 100000,
      NumberOfEmployees: rng.int(5, 5000),
      OwnerId: owner,
      Description: `${name} is a ${region} region customer.`,
      CreatedDate: sfDateTime(startMs - rng.int(1, 400) * DAY),
    });
    const contacts: string[] = [];
    for (let c = 0; c < 3; c++) {
      const first = rng.pick(FIRST);
      const last = rng.pick(LAST);
      contacts.push(
        insert("Contact", {
          Name: `${first} ${last}`,
          FirstName: first,
          LastName: last,
          Email: email(first, last, domain),
          Phone: `(555) ${rng.int(200, 999)}-${pad(rng.int(0, 9999), 4)}`,
          Title: rng.pick(["Buyer", "IT Manager", "Operations Lead", "CFO", "Office Manager"]),
          MailingCity: city,
          MailingState: state,
          AccountId: acc,
          OwnerId: owner,
          CreatedDate: sfDateTime(when(startMs - 100 * DAY, startMs)),
        }),
      );
    }
    for (let o = 0; o < 2; o++) {
      const stage = rng.weighted(STAGES, [2, 2, 2, 2, 2, 4, 2]);
      const created = when(startMs, todayMs - 10 * DAY);
      const close = created + rng.int(10, 120) * DAY;
      const oppId = insert("Opportunity", {
        Name: `${name} - ${rng.pick(["Renewal", "Expansion", "New Business", "Upgrade"])} ${o + 1}`,
        AccountId: acc,
        ContactId: rng.pick(contacts),
        OwnerId: owner,
        StageName: stage,
        Amount: 0,
        Probability: STAGE_PROB[stage]!,
        CloseDate: sfDate(close),
        Type: rng.pick(["New Customer", "Existing Customer - Upgrade", "Existing Customer - Replacement"]),
        LeadSource: rng.pick(LEAD_SOURCE),
        IsClosed: stage.startsWith("Closed") ? 1 : 0,
        IsWon: stage === "Closed Won" ? 1 : 0,
        CreatedDate: sfDateTime(created),
      });
      let amount = 0;
      for (let l = 0; l < 2; l++) {
        const p = rng.pick(products);
        const qty = rng.int(1, 20);
        const discount = rng.pick([0, 0, 5, 10]);
        const total = Math.round(qty * p.price * (1 - discount / 100) * 100) / 100;
        amount += total;
        insert("OpportunityLineItem", {
          Name: `${name} ${p.name}`,
          OpportunityId: oppId,
          Product2Id: p.id,
          PricebookEntryId: p.entry,
          Quantity: qty,
          UnitPrice: p.price,
          TotalPrice: total,
          Discount: discount,
          CreatedDate: sfDateTime(created),
        });
      }
      db.run(`UPDATE "Opportunity" SET "Amount" = ? WHERE "Id" = ?`, [Math.round(amount * 100) / 100, oppId]);
    }
    const orderItems: Array<{ id: string; product: number }> = [];
    for (let o = 0; o < 2; o++) {
      const eff = when(startMs, todayMs - 5 * DAY);
      const ordId = insert("Order", {
        OrderNumber: pad(++orderNo, 8),
        AccountId: acc,
        OwnerId: owner,
        Pricebook2Id: std,
        Status: rng.weighted(["Activated", "Draft"], [4, 1]),
        EffectiveDate: sfDate(eff),
        TotalAmount: 0,
        CreatedDate: sfDateTime(eff),
      });
      let total = 0;
      for (let l = 0; l < 2; l++) {
        const pi = rng.int(0, products.length - 1);
        const p = products[pi]!;
        const qty = rng.int(1, 12);
        const line = Math.round(qty * p.price * 100) / 100;
        total += line;
        orderItems.push({
          id: insert("OrderItem", {
            OrderItemNumber: pad(++orderItemNo, 10),
            OrderId: ordId,
            Product2Id: p.id,
            PricebookEntryId: p.entry,
            Quantity: qty,
            UnitPrice: p.price,
            TotalPrice: line,
            CreatedDate: sfDateTime(eff),
          }),
          product: pi,
        });
      }
      db.run(`UPDATE "Order" SET "TotalAmount" = ? WHERE "Id" = ?`, [Math.round(total * 100) / 100, ordId]);
    }
    const nCases = rng.int(2, 5);
    for (let c = 0; c < nCases; c++) {
      const contact = rng.pick(contacts);
      const oi = rng.pick(orderItems);
      const product = products[oi.product]!;
      const issueIdx = (oi.product + rng.int(0, 2)) % issues.length;
      const issue = issues[issueIdx]!;
      const created = when(startMs, todayMs - DAY / 2);
      const origin = rng.pick(ORIGIN);
      // owner chain: creation owner, then 0-2 transfers; the last owner keeps the case
      let ownerIdx = rng.int(0, agents.length - 1);
      const closed = created < todayMs - 20 * DAY ? rng.chance(0.85) : rng.chance(0.4);
      const nTransfers = rng.weighted([0, 1, 2], [5, 3, 1]);
      const subject = `${ISSUES[issueIdx]![0]} - ${product.name}`;
      const row: Row = {
        CaseNumber: pad(++caseNo, 8),
        Subject: subject,
        Description: `Customer reports: ${ISSUES[issueIdx]![1]} Product: ${product.name}.`,
        Status: closed ? "Closed" : rng.pick(CASE_STATUS_OPEN),
        Priority: rng.weighted(PRIORITY, [3, 4, 2, 1]),
        Origin: origin,
        AccountId: acc,
        ContactId: contact,
        OwnerId: null,
        IssueId__c: issue,
        OrderItemId__c: oi.id,
        IsClosed: closed ? 1 : 0,
        CreatedDate: sfDateTime(created),
        ClosedDate: null,
      };
      const chain = [ownerIdx];
      for (let t = 0; t < nTransfers; t++) {
        let next = rng.int(0, agents.length - 1);
        if (next === ownerIdx) next = (next + 1) % agents.length;
        chain.push(next);
        ownerIdx = next;
      }
      const finalAgent = chain[chain.length - 1]!;
      const handleMs = Math.max(1, agentSpeed[finalAgent]! * (0.5 + rng.next())) * 3_600_000;
      let closedMs = closed ? created + handleMs : undefined;
      if (closedMs !== undefined && closedMs >= todayMs) closedMs = todayMs - 60_000;
      row.OwnerId = agents[finalAgent]!;
      if (closedMs !== undefined) row.ClosedDate = sfDateTime(closedMs);
      const cid = insert("Case", row);
      hist(cid, "Case Creation", null, agents[chain[0]!]!, created);
      const end = closedMs ?? Math.min(todayMs, created + 5 * DAY);
      for (let t = 1; t < chain.length; t++) {
        const at = created + Math.floor(((end - created) * t) / (chain.length + 1));
        hist(cid, "Owner Assignment", agents[chain[t - 1]!]!, agents[chain[t]!]!, at);
      }
      if (closedMs !== undefined) hist(cid, "Case Closed", null, agents[finalAgent]!, closedMs);
      if (origin !== "Chat" || rng.chance(0.3)) {
        insert("EmailMessage", {
          ParentId: cid,
          Subject: `Re: ${subject}`,
          TextBody: `Hello, regarding case ${row.CaseNumber}: ${ISSUES[issueIdx]![1]} Please advise.`,
          FromAddress: `customer@${domain}`,
          ToAddress: "support@example-org.com",
          Incoming: 1,
          MessageDate: sfDateTime(created + 60_000),
          CreatedDate: sfDateTime(created + 60_000),
        });
      }
      if (origin === "Chat") {
        const startChat = created - 15 * 60_000;
        insert("LiveChatTranscript", {
          Name: `Chat ${pad(caseNo, 8)}`,
          CaseId: cid,
          AccountId: acc,
          ContactId: contact,
          OwnerId: agents[chain[0]!]!,
          Body: `Visitor: ${ISSUES[issueIdx]![1]} Agent: I have opened a case for the ${product.name}.`,
          Status: "Completed",
          EndedBy: rng.pick(["Visitor", "Agent"]),
          StartTime: sfDateTime(startChat),
          EndTime: sfDateTime(startChat + rng.int(3, 40) * 60_000),
          CreatedDate: sfDateTime(startChat),
        });
      }
    }
  }
  const salesRng = new Prng(((options.seed ?? 42) ^ 0x5a1e5) >>> 0);
  generateSales(db, {
    rng: salesRng,
    insert,
    todayMs,
    startMs,
    agents,
    first: FIRST,
    last: LAST,
    companies: () => {
      let name = `${salesRng.pick(CO_A)} ${salesRng.pick(CO_B)} ${salesRng.pick(CO_C)}`;
      for (let k = 2; usedAccounts.has(name); k++) name = `${name.replace(/ \d+$/, "")} ${k}`;
      return name;
    },
  });
  db.exec("COMMIT");
  for (const st of stmts.values()) st.free();
  for (const o of OBJECTS) counts[o.name] ??= 0;
  db.exec("ANALYZE");
  return counts;
}
