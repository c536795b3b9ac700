/**
 * The org's object model: Salesforce-like sObjects and fields. Each object is one SQLite table named after the
 * object; each field one column named after the field. Reference fields name their target object and the
 * relationship name SOQL uses to walk them (`AccountId` → `Account.Name`, `IssueId__c` → `IssueId__r.Name`).
 */

export type FieldType =
  | "id"
  | "string"
  | "textarea"
  | "picklist"
  | "email"
  | "phone"
  | "reference"
  | "boolean"
  | "int"
  | "double"
  | "currency"
  | "percent"
  | "date"
  | "datetime";

export interface FieldDef {
  name: string;
  type: FieldType;
  /** For references: the target object (absent for a polymorphic one such as Task.WhatId). */
  to?: string;
  /** For references: the relationship name used in SOQL paths. */
  relationship?: string;
}

export interface ObjectDef {
  name: string;
  /** The 3-character Salesforce key prefix of its Ids. */
  prefix: string;
  /** Its name field(s), searched by SOSL `IN NAME FIELDS`. */
  nameFields: string[];
  /** Writes through the DML tools are refused. */
  readOnly: boolean;
  fields: FieldDef[];
}

const id: FieldDef = { name: "Id", type: "id" };
const created: FieldDef = { name: "CreatedDate", type: "datetime" };
const ref = (name: string, to: string, relationship: string): FieldDef => ({
  name,
  type: "reference",
  to,
  relationship,
});
const f = (name: string, type: FieldType): FieldDef => ({ name, type });

export const OBJECTS: ObjectDef[] = [
  {
    name: "User",
    prefix: "005",
    nameFields: ["Name"],
    readOnly: true,
    fields: [
      id,
      f("Name", "string"),
      f("FirstName", "string"),
      f("LastName", "string"),
      f("Email", "email"),
      f("Phone", "phone"),
      f("Alias", "string"),
      f("Title", "string"),
      f("Department", "picklist"),
      f("IsActive", "boolean"),
      created,
    ],
  },
  {
    name: "Territory2",
    prefix: "0MI",
    nameFields: ["Name"],
    readOnly: true,
    fields: [id, f("Name", "string"), f("Description", "textarea"), created],
  },
  {
    name: "UserTerritory2Association",
    prefix: "0R0",
    nameFields: [],
    readOnly: true,
    fields: [
      id,
      ref("UserId", "User", "User"),
      ref("Territory2Id", "Territory2", "Territory2"),
      f("RoleInTerritory2", "picklist"),
      created,
    ],
  },
  {
    name: "Account",
    prefix: "001",
    nameFields: ["Name"],
    readOnly: false,
    fields: [
      id,
      f("Name", "string"),
      f("Industry", "picklist"),
      f("Type", "picklist"),
      f("BillingCity", "string"),
      f("BillingState", "string"),
      f("BillingCountry", "string"),
      f("Phone", "phone"),
      f("AnnualRevenue", "currency"),
      f("NumberOfEmployees", "int"),
      ref("OwnerId", "User", "Owner"),
      f("Description", "textarea"),
      created,
    ],
  },
  {
    name: "Contact",
    prefix: "003",
    nameFields: ["Name"],
    readOnly: false,
    fields: [
      id,
      f("Name", "string"),
      f("FirstName", "string"),
      f("LastName", "string"),
      f("Email", "email"),
      f("Phone", "phone"),
      f("Title", "string"),
      f("MailingCity", "string"),
      f("MailingState", "string"),
      ref("AccountId", "Account", "Account"),
      ref("OwnerId", "User", "Owner"),
      created,
    ],
  },
  {
    name: "Product2",
    prefix: "01t",
    nameFields: ["Name"],
    readOnly: true,
    fields: [
      id,
      f("Name", "string"),
      f("ProductCode", "string"),
      f("Family", "picklist"),
      f("Description", "textarea"),
      f("IsActive", "boolean"),
      created,
    ],
  },
  {
    name: "Pricebook2",
    prefix: "01s",
    nameFields: ["Name"],
    readOnly: true,
    fields: [
      id,
      f("Name", "string"),
      f("Description", "textarea"),
      f("IsActive", "boolean"),
      f("IsStandard", "boolean"),
      created,
    ],
  },
  {
    name: "PricebookEntry",
    prefix: "01u",
    nameFields: ["Name"],
    readOnly: true,
    fields: [
      id,
      f("Name", "string"),
      ref("Pricebook2Id", "Pricebook2", "Pricebook2"),
      ref("Product2Id", "Product2", "Product2"),
      f("UnitPrice", "currency"),
      f("IsActive", "boolean"),
      created,
    ],
  },
  {
    name: "Opportunity",
    prefix: "006",
    nameFields: ["Name"],
    readOnly: false,
    fields: [
      id,
      f("Name", "string"),
      ref("AccountId", "Account", "Account"),
      ref("ContactId", "Contact", "Contact"),
      ref("OwnerId", "User", "Owner"),
      f("StageName", "picklist"),
      f("Amount", "currency"),
      f("Probability", "percent"),
      f("CloseDate", "date"),
      f("Type", "picklist"),
      f("LeadSource", "picklist"),
      f("IsClosed", "boolean"),
      f("IsWon", "boolean"),
      created,
    ],
  },
  {
    name: "OpportunityLineItem",
    prefix: "00k",
    nameFields: ["Name"],
    readOnly: false,
    fields: [
      id,
      f("Name", "string"),
      ref("OpportunityId", "Opportunity", "Opportunity"),
      ref("Product2Id", "Product2", "Product2"),
      ref("PricebookEntryId", "PricebookEntry", "PricebookEntry"),
      f("Quantity", "double"),
      f("UnitPrice", "currency"),
      f("TotalPrice", "currency"),
      f("Discount", "percent"),
      created,
    ],
  },
  {
    name: "Order",
    prefix: "801",
    nameFields: ["OrderNumber"],
    readOnly: false,
    fields: [
      id,
      f("OrderNumber", "string"),
      ref("AccountId", "Account", "Account"),
      ref("OwnerId", "User", "Owner"),
      ref("Pricebook2Id", "Pricebook2", "Pricebook2"),
      f("Status", "picklist"),
      f("EffectiveDate", "date"),
      f("TotalAmount", "currency"),
      created,
    ],
  },
  {
    name: "OrderItem",
    prefix: "802",
    nameFields: ["OrderItemNumber"],
    readOnly: false,
    fields: [
      id,
      f("OrderItemNumber", "string"),
      ref("OrderId", "Order", "Order"),
      ref("Product2Id", "Product2", "Product2"),
      ref("PricebookEntryId", "PricebookEntry", "PricebookEntry"),
      f("Quantity", "double"),
      f("UnitPrice", "currency"),
      f("TotalPrice", "currency"),
      created,
    ],
  },
  {
    name: "Issue__c",
    prefix: "a00",
    nameFields: ["Name"],
    readOnly: true,
    fields: [id, f("Name", "string"), f("IssueDescription__c", "textarea"), created],
  },
  {
    name: "Case",
    prefix: "500",
    nameFields: ["Subject", "CaseNumber"],
    readOnly: false,
    fields: [
      id,
      f("CaseNumber", "string"),
      f("Subject", "string"),
      f("Description", "textarea"),
      f("Status", "picklist"),
      f("Priority", "picklist"),
      f("Origin", "picklist"),
      ref("AccountId", "Account", "Account"),
      ref("ContactId", "Contact", "Contact"),
      ref("OwnerId", "User", "Owner"),
      ref("IssueId__c", "Issue__c", "IssueId__r"),
      ref("OrderItemId__c", "OrderItem", "OrderItemId__r"),
      f("IsClosed", "boolean"),
      created,
      f("ClosedDate", "datetime"),
    ],
  },
  {
    name: "CaseHistory__c",
    prefix: "a01",
    nameFields: ["Name"],
    readOnly: true,
    fields: [
      id,
      f("Name", "string"),
      ref("CaseId__c", "Case", "CaseId__r"),
      f("Field__c", "picklist"),
      f("OldValue__c", "string"),
      f("NewValue__c", "string"),
      created,
    ],
  },
  {
    name: "Knowledge__kav",
    prefix: "ka0",
    nameFields: ["Title"],
    readOnly: true,
    fields: [
      id,
      f("Title", "string"),
      f("UrlName", "string"),
      f("Summary", "textarea"),
      f("FAQ_Answer__c", "textarea"),
      f("PublishStatus", "picklist"),
      created,
    ],
  },
  {
    name: "EmailMessage",
    prefix: "02s",
    nameFields: ["Subject"],
    readOnly: true,
    fields: [
      id,
      ref("ParentId", "Case", "Parent"),
      f("Subject", "string"),
      f("TextBody", "textarea"),
      f("FromAddress", "email"),
      f("ToAddress", "email"),
      f("Incoming", "boolean"),
      f("MessageDate", "datetime"),
      created,
    ],
  },
  {
    name: "LiveChatTranscript",
    prefix: "570",
    nameFields: ["Name"],
    readOnly: true,
    fields: [
      id,
      f("Name", "string"),
      ref("CaseId", "Case", "Case"),
      ref("AccountId", "Account", "Account"),
      ref("ContactId", "Contact", "Contact"),
      ref("OwnerId", "User", "Owner"),
      f("Body", "textarea"),
      f("Status", "picklist"),
      f("EndedBy", "picklist"),
      f("StartTime", "datetime"),
      f("EndTime", "datetime"),
      created,
    ],
  },
  {
    name: "Lead",
    prefix: "00Q",
    nameFields: ["Name", "Company"],
    readOnly: false,
    fields: [
      id,
      f("Name", "string"),
      f("FirstName", "string"),
      f("LastName", "string"),
      f("Company", "string"),
      f("Title", "string"),
      f("Email", "email"),
      f("Phone", "phone"),
      f("Status", "picklist"),
      f("LeadSource", "picklist"),
      f("Industry", "picklist"),
      f("State", "string"),
      ref("OwnerId", "User", "Owner"),
      f("IsConverted", "boolean"),
      f("ConvertedDate", "date"),
      ref("ConvertedAccountId", "Account", "ConvertedAccount"),
      ref("ConvertedContactId", "Contact", "ConvertedContact"),
      ref("ConvertedOpportunityId", "Opportunity", "ConvertedOpportunity"),
      created,
    ],
  },
  {
    name: "Contract",
    prefix: "800",
    nameFields: ["ContractNumber"],
    readOnly: true,
    fields: [
      id,
      f("ContractNumber", "string"),
      ref("AccountId", "Account", "Account"),
      f("Status", "picklist"),
      f("StartDate", "date"),
      f("ContractTerm", "int"),
      f("CustomerSignedDate", "date"),
      f("CompanySignedDate", "date"),
      f("Description", "textarea"),
      created,
    ],
  },
  {
    name: "Quote",
    prefix: "0Q0",
    nameFields: ["Name"],
    readOnly: false,
    fields: [
      id,
      f("Name", "string"),
      ref("OpportunityId", "Opportunity", "Opportunity"),
      ref("AccountId", "Account", "Account"),
      ref("ContactId", "Contact", "Contact"),
      f("Status", "picklist"),
      f("Description", "textarea"),
      f("ExpirationDate", "date"),
      f("TotalPrice", "currency"),
      created,
    ],
  },
  {
    name: "QuoteLineItem",
    prefix: "0QL",
    nameFields: [],
    readOnly: false,
    fields: [
      id,
      ref("QuoteId", "Quote", "Quote"),
      ref("OpportunityLineItemId", "OpportunityLineItem", "OpportunityLineItem"),
      ref("Product2Id", "Product2", "Product2"),
      ref("PricebookEntryId", "PricebookEntry", "PricebookEntry"),
      f("Quantity", "double"),
      f("UnitPrice", "currency"),
      f("Discount", "percent"),
      f("TotalPrice", "currency"),
      created,
    ],
  },
  {
    name: "Task",
    prefix: "00T",
    nameFields: ["Subject"],
    readOnly: true,
    fields: [
      id,
      f("Subject", "string"),
      f("WhatId", "reference"),
      f("WhoId", "reference"),
      ref("OwnerId", "User", "Owner"),
      f("Status", "picklist"),
      f("Priority", "picklist"),
      f("ActivityDate", "date"),
      f("Description", "textarea"),
      created,
    ],
  },
  {
    name: "Event",
    prefix: "00U",
    nameFields: ["Subject"],
    readOnly: true,
    fields: [
      id,
      f("Subject", "string"),
      f("WhatId", "reference"),
      f("WhoId", "reference"),
      ref("OwnerId", "User", "Owner"),
      f("StartDateTime", "datetime"),
      f("DurationInMinutes", "int"),
      f("Location", "string"),
      f("IsAllDayEvent", "boolean"),
      f("Description", "textarea"),
      created,
    ],
  },
  {
    name: "VoiceCallTranscript__c",
    prefix: "a02",
    nameFields: ["Name"],
    readOnly: true,
    fields: [
      id,
      f("Name", "string"),
      ref("OpportunityId__c", "Opportunity", "OpportunityId__r"),
      ref("LeadId__c", "Lead", "LeadId__r"),
      f("Body__c", "textarea"),
      f("EndTime__c", "datetime"),
      created,
    ],
  },
];

export interface Schema {
  objects: Map<string, ObjectDef>;
  /** Case-insensitive lookups: lower-case name → canonical definition. */
  object(name: string): ObjectDef | undefined;
  field(obj: ObjectDef, name: string): FieldDef | undefined;
  relationship(obj: ObjectDef, name: string): FieldDef | undefined;
}

/** A schema over object definitions (the embedded one, or one read from a loaded org). */
export function buildSchema(defs: ObjectDef[]): Schema {
  const objects = new Map(defs.map((o) => [o.name, o]));
  const byLower = new Map(defs.map((o) => [o.name.toLowerCase(), o]));
  const fields = new Map<string, Map<string, FieldDef>>();
  const rels = new Map<string, Map<string, FieldDef>>();
  for (const o of defs) {
    fields.set(o.name, new Map(o.fields.map((x) => [x.name.toLowerCase(), x])));
    rels.set(o.name, new Map(o.fields.filter((x) => x.relationship).map((x) => [x.relationship!.toLowerCase(), x])));
  }
  return {
    objects,
    object: (name) => byLower.get(name.toLowerCase()),
    field: (obj, name) => fields.get(obj.name)?.get(name.toLowerCase()),
    relationship: (obj, name) => rels.get(obj.name)?.get(name.toLowerCase()),
  };
}

export const SCHEMA: Schema = buildSchema(OBJECTS);

const SQL_TYPE: Record<FieldType, string> = {
  id: "TEXT",
  string: "TEXT COLLATE NOCASE",
  textarea: "TEXT COLLATE NOCASE",
  picklist: "TEXT COLLATE NOCASE",
  email: "TEXT COLLATE NOCASE",
  phone: "TEXT",
  reference: "TEXT",
  boolean: "INTEGER",
  int: "INTEGER",
  double: "REAL",
  currency: "REAL",
  percent: "REAL",
  date: "TEXT",
  datetime: "TEXT",
};

/** Columns worth an index (besides references): the ones tasks filter and sort on. */
const INDEXED = new Set([
  "Case.Status",
  "Case.CreatedDate",
  "Case.ClosedDate",
  "Case.Priority",
  "Account.Name",
  "Contact.Name",
  "Contact.Email",
  "User.Name",
  "Product2.Name",
  "Opportunity.StageName",
  "Opportunity.CloseDate",
  "Order.EffectiveDate",
  "CaseHistory__c.Field__c",
  "CaseHistory__c.CreatedDate",
  "LiveChatTranscript.StartTime",
  "Lead.Status",
  "Lead.CreatedDate",
  "Quote.Status",
  "Task.ActivityDate",
  "Task.WhatId",
  "Event.WhatId",
]);

/** SQL DDL for the whole schema (tables, then indexes). */
export function schemaDdl(objects: ObjectDef[] = OBJECTS): string {
  const out: string[] = [];
  for (const o of objects) {
    const cols = o.fields.map((x) => `"${x.name}" ${SQL_TYPE[x.type]}${x.type === "id" ? " PRIMARY KEY" : ""}`);
    out.push(`CREATE TABLE "${o.name}" (${cols.join(", ")}) WITHOUT ROWID;`);
  }
  for (const o of objects) {
    for (const x of o.fields) {
      if (x.type === "reference" || INDEXED.has(`${o.name}.${x.name}`)) {
        out.push(`CREATE INDEX "ix_${o.name}_${x.name}" ON "${o.name}" ("${x.name}");`);
      }
    }
  }
  return out.join("\n");
}

/** A short human-readable description of the schema for the system prompt. */
export function describeSchema(schema: Schema = SCHEMA): string {
  return [...schema.objects.values()]
    .map((o) => {
      const fields = o.fields.map((x) =>
        x.type === "reference" && x.to ? `${x.name} (→ ${x.to} via ${x.relationship})` : x.name,
      );
      return `${o.name}${o.readOnly ? " [read-only]" : ""}: ${fields.join(", ")}`;
    })
    .join("\n");
}
