#!/usr/bin/env node
/**
 * Deterministically generates the fixture world of @benchmax/env-wikipedia from structured facts:
 *   fixtures/corpus.jsonl          ≥ 150 fictional encyclopedia articles ({title, text, url}), cross-linked
 *   fixtures/hotpotqa.json         HotpotQA rows        {_id, question, answer, type, level, supporting_facts, context}
 *   fixtures/hotpotqa-hf.jsonl     the same rows in the Hugging Face layout {id, …, supporting_facts: {title, sent_id},
 *                                  context: {title, sentences}}
 *   fixtures/2wikimultihopqa.json  2WikiMultihopQA rows {_id, type, question, context, supporting_facts, evidences, answer}
 *   fixtures/musique.jsonl         MuSiQue rows         {id, paragraphs, question, question_decomposition, answer, answer_aliases, answerable}
 *   fixtures/bamboogle.json        Bamboogle rows       {Question, Answer}
 *   fixtures/flashrag.jsonl        FlashRAG rows        {id, question, golden_answers, metadata}
 *   fixtures/plain.jsonl           plain rows           {id, prompt, ground_truth}
 *   fixtures/chains.json           question → the articles to read, hop by hop (for the reference policy only)
 * Every answer is derived from the same facts the articles are written from.
 * Run: node scripts/make-corpus.mjs [--out DIR]
 * Everything here is invented: no real person, place or company is described.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { seededRandom } from "@benchmax/core";

const outArg = process.argv.indexOf("--out");
const OUT = outArg > 0 ? process.argv[outArg + 1] : join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures");

// ---------- deterministic randomness ----------
const rand = seededRandom(20261123);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (arr) => arr[Math.floor(rand() * arr.length)];
function shuffle(arr) {
  const a = [...arr];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}
function fnv(s, seed = 0x811c9dc5) {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}
const hexId = (s, n) => [fnv(s), fnv(s, 0x1234567), fnv(s, 0x89abcdef), fnv(s, 0x5bd1e995)].join("").slice(0, n);
const list = (xs) => (xs.length <= 1 ? (xs[0] ?? "") : `${xs.slice(0, -1).join(", ")} and ${xs[xs.length - 1]}`);
const thousands = (n) => n.toLocaleString("en-US");

// ---------- the facts ----------
const countries = [
  ["Valdoria", "Valdorian", "Valdorian crown", "Valdic"],
  ["Keshmar", "Keshmari", "Keshmari dinar", "Keshi"],
  ["Ostrelia", "Ostrelian", "Ostrelian mark", "Ostrelic"],
  ["Marundel", "Marundese", "Marundese lira", "Marundese"],
  ["Tavenor", "Tavenese", "Tavenese florin", "Tavenese"],
  ["Quillandia", "Quillish", "Quillish pound", "Quillish"],
].map(([name, demonym, currency, language]) => ({
  kind: "country",
  name,
  demonym,
  currency,
  language,
  founded: int(1640, 1820),
  sea: pick(["Amber Sea", "Gulf of Serrin", "Pale Ocean", "Sea of Morrow"]),
  cities: [],
}));

const cityNames = [
  "Ardenhal",
  "Belmora",
  "Corvanne",
  "Dunmere",
  "Eskarra",
  "Fallowmere",
  "Gildenport",
  "Halvorn",
  "Istrava",
  "Jessavel",
  "Kelmarch",
  "Lunhaven",
  "Mirevale",
  "Norrowind",
  "Olvasta",
  "Pellingford",
  "Quarrin",
  "Rosmere",
  "Saltmarrow",
  "Tiberlane",
  "Umbersea",
  "Vantorre",
  "Wexhollow",
  "Yarrowby",
  "Zelmont",
  "Brackwater",
  "Cindervale",
  "Drossel",
  "Emberlund",
  "Farrowgate",
];
const cities = cityNames.map((name, i) => {
  const country = countries[i % countries.length];
  const c = { kind: "city", name, country, founded: int(1050, 1790), population: int(18, 2400) * 1000, river: null };
  country.cities.push(c);
  return c;
});
for (const c of countries) c.capital = c.cities[0];

const mountains = [
  "Mount Kaldris",
  "Mount Ferrow",
  "Mount Ossin",
  "Mount Teralune",
  "Mount Gavrel",
  "Mount Ilvaran",
  "Mount Brekka",
  "Mount Sorrel",
].map((name) => ({ kind: "mountain", name, country: pick(countries), height: int(1200, 4800), rivers: [] }));

const riverNames = [
  "Orrin",
  "Velka",
  "Tamsel",
  "Kirra",
  "Morrow",
  "Daskel",
  "Pennath",
  "Siloe",
  "Quenna",
  "Halder",
  "Ysolt",
  "Ystra",
];
const riverCities = shuffle(cities).slice(0, 24);
const rivers = riverNames.map((n, i) => {
  const r = {
    kind: "river",
    name: `${n} River`,
    source: mountains[i % mountains.length],
    length: int(80, 900),
    cities: riverCities.slice(i * 2, i * 2 + 2),
    mouth: pick(["Amber Sea", "Gulf of Serrin", "Pale Ocean", "Sea of Morrow"]),
  };
  for (const c of r.cities) c.river = r;
  r.source.rivers.push(r);
  return r;
});

const firstNames = [
  "Arlo",
  "Beatrix",
  "Cassian",
  "Delphine",
  "Emrys",
  "Fenna",
  "Galen",
  "Hesper",
  "Ivo",
  "Juno",
  "Kestrel",
  "Liora",
  "Magnus",
  "Nerys",
  "Osric",
  "Petra",
  "Quintus",
  "Rhea",
  "Soren",
  "Thea",
  "Ulric",
  "Vesna",
  "Wendel",
  "Xanthe",
  "Yorick",
  "Zora",
  "Anselm",
  "Bryony",
  "Corin",
  "Dagny",
  "Edric",
  "Freya",
  "Gideon",
  "Halla",
  "Ingram",
  "Jessamy",
  "Konrad",
  "Lisbet",
  "Matthias",
  "Noor",
  "Osmund",
  "Pauline",
  "Rupert",
  "Sabine",
  "Tobias",
  "Una",
  "Valter",
  "Wilhelmina",
  "Yannick",
  "Ysolde",
];
const surnames = [
  "Venmoor",
  "Tollack",
  "Quessary",
  "Ambervale",
  "Brightmere",
  "Castellan",
  "Dunholt",
  "Everhold",
  "Farrant",
  "Grevillon",
  "Hollistar",
  "Ingleby",
  "Jorvald",
  "Kestrow",
  "Lindqvar",
  "Marrowby",
  "Norcastle",
  "Oakhurst",
  "Pembrace",
  "Quarrell",
  "Ravensholm",
  "Sallowick",
  "Thorncroft",
  "Umberlain",
  "Vossberg",
  "Whitlock",
  "Yelvane",
  "Zeller",
  "Ashgrove",
  "Bellcourt",
  "Corrigan",
  "Delacourt",
  "Estover",
  "Fairweather",
  "Galvane",
  "Hartwell",
  "Ivers",
  "Jessop",
  "Kingsmere",
  "Lockhart",
  "Merriweather",
  "Nightholm",
  "Ormsby",
  "Penhallow",
  "Quenby",
  "Rowntree",
  "Stratton",
  "Tremaine",
  "Underhill",
  "Wolcott",
];
const people = firstNames.map((f, i) => ({
  kind: "person",
  name: `${f} ${surnames[i]}`,
  surname: surnames[i],
  he: i % 2 === 0,
  born: int(1850, 1975),
  city: pick(cities),
  founded: [],
  works: [],
  awards: [],
  ascents: [],
  namesakeOf: [],
}));
for (const p of people) {
  if (p.born < 1935) p.died = Math.min(2024, p.born + int(55, 95));
  p.country = p.city.country;
}

const universities = [];
for (const c of shuffle(cities).slice(0, 8)) {
  universities.push({
    kind: "university",
    name: `University of ${c.name}`,
    city: c,
    founded: int(1540, 1880),
    alumni: [],
  });
}
for (const p of shuffle(people).slice(0, 4)) {
  const name = pick([`${p.surname} Institute of Technology`, `${p.surname} College`]);
  universities.push({
    kind: "university",
    name,
    city: pick(cities),
    founded: Math.max(p.born + 40, 1890),
    namedAfter: p,
    alumni: [],
  });
  p.namesakeOf.push(name);
}
for (const p of people) {
  const ok = universities.filter((u) => u.founded <= p.born + 18 && u.namedAfter !== p);
  p.university = ok.length ? pick(ok) : universities.reduce((a, b) => (a.founded < b.founded ? a : b));
  p.university.alumni.push(p);
}

const industries = [
  ["textile manufacturing", "Mills", "loom"],
  ["shipbuilding", "Shipyards", "schooner"],
  ["publishing", "Press", "pocket atlas"],
  ["railway engineering", "Locomotive Works", "locomotive"],
  ["pharmaceuticals", "Pharmaceuticals", "tonic"],
  ["glassmaking", "Glassworks", "lighthouse lens"],
  ["aviation", "Aeronautics", "monoplane"],
  ["telecommunications", "Telegraph Company", "switchboard"],
  ["brewing", "Brewery", "amber ale"],
  ["optics", "Optical", "field telescope"],
];
const stems = [
  "Velkaro",
  "Tessant",
  "Brannock",
  "Ollivane",
  "Kestrin",
  "Morvell",
  "Drayhollow",
  "Syndra",
  "Pelloway",
  "Vintaro",
  "Caddock",
  "Ferrovane",
  "Glimmerby",
  "Hallowmere",
  "Ironsby",
  "Jastrow",
  "Kordell",
  "Lumenhall",
  "Marchby",
  "Nethra",
  "Ostwick",
  "Pravon",
  "Quorra",
  "Ressel",
  "Stellan",
];
const productStems = ["Corvel", "Avent", "Halvane", "Tirro", "Brisk", "Olmer", "Skelda", "Verrin", "Ambry", "Dorne"];
const founderPool = shuffle(people.slice(0, 25));
const companies = stems.map((stem, i) => {
  const [industry, suffix, noun] = industries[i % industries.length];
  const founder = founderPool[i];
  const c = {
    kind: "company",
    name: `${stem} ${suffix}`,
    industry,
    founder,
    founded: founder.born + int(24, 45),
    city: pick(cities),
    product: `${productStems[i % productStems.length]} ${int(2, 9)}${i >= 10 ? String.fromCharCode(65 + (i % 7)) : ""} ${noun}`,
    published: [],
  };
  founder.founded.push(c);
  return c;
});
const publishers = companies.filter((c) => c.industry === "publishing");

const workTitles = [
  "The Glass Orchard",
  "Salt and Cinder",
  "The Lantern Keeper",
  "Nine Bridges",
  "The Quiet Cartographer",
  "Ashes of the Meridian",
  "The Ferryman's Daughter",
  "Under the Copper Sky",
  "The Last Tidewatcher",
  "Winter Ledger",
  "The Paper Lighthouse",
  "Songs for a Drowned City",
  "The Orchard Wars",
  "A Map of Small Rivers",
  "The Clockmaker's Silence",
  "Iron Gardens",
  "The Sleeping Archive",
  "Harbour of Lost Names",
  "The Violet Causeway",
  "Letters from the Pale Ocean",
];
const works = workTitles.map((title, i) => {
  const author = people[25 + i];
  const w = {
    kind: "work",
    name: title,
    form: pick(["novel", "novel", "poetry collection", "memoir", "short story collection"]),
    author,
    year: author.born + int(24, 48),
    publisher: pick(publishers),
  };
  author.works.push(w);
  w.publisher.published.push(w);
  return w;
});

for (const [i, m] of mountains.entries()) {
  const climber = people[(45 + i) % people.length];
  m.ascent = { by: climber, year: Math.max(climber.born + int(22, 40), 1880) };
  climber.ascents.push(m);
}

const fields = [
  "literature",
  "engineering",
  "medicine",
  "architecture",
  "music",
  "exploration",
  "chemistry",
  "economics",
  "poetry",
  "design",
];
const namesakes = shuffle(people.filter((p) => p.born < 1910)).slice(0, 10);
const awards = namesakes.map((p, i) => {
  const a = {
    kind: "award",
    name: `${p.surname} ${pick(["Prize", "Medal", "Award"])} for ${fields[i][0].toUpperCase()}${fields[i].slice(1)}`,
    field: fields[i],
    namedAfter: p,
    established: Math.min(p.born + int(50, 80), 1995),
    presenter: pick(universities),
    recipients: [],
  };
  p.namesakeOf.push(a.name);
  const pool = shuffle(people.filter((q) => q !== p));
  for (const q of pool) {
    if (a.recipients.length >= 4) break;
    const lo = Math.max(a.established, q.born + 28);
    const hi = Math.min(2024, q.died ?? 2024);
    if (lo > hi) continue;
    const year = int(lo, hi);
    if (q.awards.some((x) => x.year === year) || a.recipients.some((r) => r.year === year)) continue;
    a.recipients.push({ person: q, year });
    q.awards.push({ award: a, year });
  }
  a.recipients.sort((x, y) => x.year - y.year);
  return a;
});

// ---------- articles (sentences, so HotpotQA-style rows can cite sentence indices) ----------
const He = (p) => (p.he ? "He" : "She");
const him = (p) => (p.he ? "him" : "her");
const the = (u) => (u.name.startsWith("University") ? `the ${u.name}` : u.name);
const The = (u) => (u.name.startsWith("University") ? `The ${u.name}` : u.name);
const an = (w) => (/^[AEIOU]/i.test(w) ? `an ${w}` : `a ${w}`);
const lifespan = (p) => (p.died ? `${p.born}–${p.died}` : `born ${p.born}`);
const occupation = (p) =>
  p.founded.length
    ? "industrialist"
    : p.works.length
      ? "writer"
      : p.ascents.length
        ? "mountaineer"
        : pick(["engineer", "physician", "architect", "composer", "economist", "chemist"]);

const articles = new Map();
function article(entity, sentences) {
  articles.set(entity.name, { entity, title: entity.name, sentences: sentences.filter(Boolean) });
}

for (const c of countries) {
  const rivs = rivers.filter((r) => r.cities.some((x) => x.country === c)).map((r) => r.name);
  const mts = mountains.filter((m) => m.country === c).sort((a, b) => b.height - a.height);
  const born = people
    .filter((p) => p.country === c)
    .slice(0, 6)
    .map((p) => p.name);
  article(c, [
    `${c.name} is a sovereign state on the shores of the ${c.sea}.`,
    `It was founded as an independent kingdom in ${c.founded}.`,
    `The capital of ${c.name} is ${c.capital.name}.`,
    `Its official language is ${c.language}, and the currency of ${c.name} is the ${c.currency}.`,
    `Other cities of ${c.name} include ${list(c.cities.slice(1).map((x) => x.name))}.`,
    rivs.length ? `Rivers flowing through ${c.name} include the ${list(rivs)}.` : `${c.name} has no major river.`,
    mts.length ? `The highest mountain of ${c.name} is ${mts[0].name}, at ${thousands(mts[0].height)} metres.` : "",
    born.length ? `Notable ${c.demonym} people include ${list(born)}.` : "",
  ]);
}
for (const c of cities) {
  const unis = universities.filter((u) => u.city === c).map(the);
  const hq = companies.filter((x) => x.city === c).map((x) => x.name);
  const born = people.filter((p) => p.city === c).map((p) => p.name);
  article(c, [
    `${c.name} is a city in ${c.country.name}${c.country.capital === c ? ", of which it is the capital" : ""}.`,
    `It was founded in ${c.founded} and had a population of ${thousands(c.population)} at the last census.`,
    c.river ? `The ${c.river.name} flows through ${c.name}.` : `${c.name} lies on no major river.`,
    unis.length ? `${c.name} is home to ${list(unis)}.` : "",
    hq.length ? `Companies headquartered in ${c.name} include ${list(hq)}.` : "",
    born.length ? `People born in ${c.name} include ${list(born)}.` : "",
  ]);
}
for (const r of rivers) {
  const cs = [...new Set(r.cities.map((c) => c.country.name))];
  article(r, [
    `The ${r.name} is a river in ${list(cs)}.`,
    `It rises on the slopes of ${r.source.name} and flows for ${r.length} kilometres.`,
    `Along its course it passes through ${list(r.cities.map((c) => c.name))}.`,
    `The river empties into the ${r.mouth}.`,
  ]);
}
for (const m of mountains) {
  article(m, [
    `${m.name} is a mountain in ${m.country.name}.`,
    `Its summit has an elevation of ${thousands(m.height)} metres.`,
    m.rivers.length ? `It is the source of the ${list(m.rivers.map((r) => r.name))}.` : "",
    `The first recorded ascent of ${m.name} was made in ${m.ascent.year} by ${m.ascent.by.name}.`,
  ]);
}
for (const p of people) {
  article(p, [
    `${p.name} (${lifespan(p)}) ${p.died ? "was" : "is"} ${an(p.country.demonym)} ${occupation(p)}.`,
    `${He(p)} was born in ${p.city.name} in ${p.born}.`,
    `${He(p)} studied at ${the(p.university)}.`,
    ...p.founded.map((c) => `In ${c.founded} ${p.he ? "he" : "she"} founded ${c.name}, ${an(c.industry)} company.`),
    ...p.works.map((w) => `${He(p)} wrote ${w.name}, ${an(w.form)} published in ${w.year}.`),
    ...p.ascents.map((m) => `${He(p)} made the first recorded ascent of ${m.name} in ${m.ascent.year}.`),
    ...p.awards.map((a) => `In ${a.year} ${p.he ? "he" : "she"} received the ${a.award.name}.`),
    ...p.namesakeOf.map((n) => `The ${n} is named after ${him(p)}.`),
    p.died ? `${He(p)} died in ${p.died}.` : "",
  ]);
}
for (const c of companies) {
  article(c, [
    `${c.name} is ${an(c.industry)} company headquartered in ${c.city.name}, ${c.city.country.name}.`,
    `It was founded in ${c.founded} by ${c.founder.name}.`,
    `The company is best known for the ${c.product}.`,
    c.published.length ? `Its books include ${list(c.published.map((w) => `${w.name} by ${w.author.name}`))}.` : "",
  ]);
}
for (const u of universities) {
  const presents = awards.filter((a) => a.presenter === u).map((a) => `the ${a.name}`);
  article(u, [
    `${The(u)} is a university in ${u.city.name}, ${u.city.country.name}.`,
    `It was founded in ${u.founded}.`,
    u.namedAfter ? `It is named after ${u.namedAfter.name}.` : "",
    u.alumni.length ? `Its alumni include ${list(u.alumni.slice(0, 8).map((p) => p.name))}.` : "",
    presents.length ? `The university presents ${list(presents)}.` : "",
  ]);
}
for (const a of awards) {
  article(a, [
    `The ${a.name} is an award for ${a.field} presented by ${the(a.presenter)}.`,
    `It was established in ${a.established} and is named after ${a.namedAfter.name}.`,
    a.recipients.length ? `Recipients include ${list(a.recipients.map((r) => `${r.person.name} (${r.year})`))}.` : "",
  ]);
}
for (const w of works) {
  article(w, [
    `${w.name} is ${an(w.form)} by ${w.author.name}, first published in ${w.year}.`,
    `It was published by ${w.publisher.name}.`,
    `The book is set in ${w.author.city.name} and follows ${pick(["a family of ferry pilots", "a disgraced surveyor", "two rival glassblowers", "an archivist and her brother", "a travelling clockmaker"])} over ${pick(["a single winter", "three generations", "one long summer", "a decade of floods"])}.`,
  ]);
}

const textOf = (a) => a.sentences.join(" ");
const urlOf = (t) => `https://fixtures.benchmax.invalid/wiki/${encodeURIComponent(t.replaceAll(" ", "_"))}`;
function sentIdx(title, needle) {
  const a = articles.get(title);
  if (!a) throw new Error(`no article "${title}"`);
  const i = a.sentences.findIndex((s) => s.includes(needle));
  if (i < 0) throw new Error(`article "${title}" does not state "${needle}"`);
  return i;
}

// ---------- questions: each a chain of steps; a step is one fact read in one article ----------
// step: {title (the article stating it), q (sub-question), a (its answer), rel, subj, needle (text proving it)}
const step = (title, q, a, subj, rel, needle = a) => ({ title, q, a, subj, rel, needle });
const templates = {
  founderCountry: () =>
    companies.map((c) => ({
      question: `In which country was the founder of ${c.name} born?`,
      steps: [
        step(c.name, `Who founded ${c.name}?`, c.founder.name, c.name, "founded by"),
        step(c.founder.name, "Where was #1 born?", c.founder.city.name, c.founder.name, "place of birth"),
        step(c.founder.city.name, "In which country is #2?", c.founder.country.name, c.founder.city.name, "country"),
      ],
    })),
  birthRiver: () =>
    people
      .filter((p) => p.city.river)
      .map((p) => ({
        question: `Which river flows through the city where ${p.name} was born?`,
        steps: [
          step(p.name, `Where was ${p.name} born?`, p.city.name, p.name, "place of birth"),
          step(
            p.city.name,
            "Which river flows through #1?",
            p.city.river.name,
            p.city.name,
            "located next to body of water",
          ),
        ],
      })),
  uniCapital: () =>
    universities
      .filter((u) => u.city.country.capital !== u.city)
      .map((u) => ({
        question: `What is the capital of the country in which ${the(u)} is located?`,
        steps: [
          step(u.name, `In which city is ${the(u)}?`, u.city.name, u.name, "located in"),
          step(u.city.name, "In which country is #1?", u.city.country.name, u.city.name, "country"),
          step(
            u.city.country.name,
            "What is the capital of #2?",
            u.city.country.capital.name,
            u.city.country.name,
            "capital",
          ),
        ],
      })),
  awardEstablished: () =>
    people.flatMap((p) =>
      p.awards.map((x) => ({
        question: `In what year was the award that ${p.name} received in ${x.year} established?`,
        steps: [
          step(p.name, `Which award did ${p.name} receive in ${x.year}?`, x.award.name, p.name, "award received"),
          step(x.award.name, "When was #1 established?", String(x.award.established), x.award.name, "inception"),
        ],
      })),
    ),
  sourceHeight: () =>
    cities
      .filter((c) => c.river)
      .map((c) => {
        const m = c.river.source;
        return {
          question: `What is the elevation of the mountain on which the river flowing through ${c.name} rises?`,
          aliases: [`${thousands(m.height)} metres`, `${m.height} m`, `${m.height} metres`],
          steps: [
            step(c.name, `Which river flows through ${c.name}?`, c.river.name, c.name, "located next to body of water"),
            step(c.river.name, "On which mountain does #1 rise?", m.name, c.river.name, "source"),
            step(m.name, "What is the elevation of #2?", `${thousands(m.height)} metres`, m.name, "elevation"),
          ],
        };
      }),
  authorCurrency: () =>
    works.map((w) => ({
      question: `What is the currency of the country where the author of ${w.name} was born?`,
      steps: [
        step(w.name, `Who wrote ${w.name}?`, w.author.name, w.name, "author"),
        step(w.author.name, "Where was #1 born?", w.author.city.name, w.author.name, "place of birth"),
        step(w.author.city.name, "In which country is #2?", w.author.country.name, w.author.city.name, "country"),
        step(
          w.author.country.name,
          "What is the currency of #3?",
          w.author.country.currency,
          w.author.country.name,
          "currency",
        ),
      ],
    })),
  productFounderCity: () =>
    companies.map((c) => ({
      question: `Where was the founder of the company that makes the ${c.product} born?`,
      steps: [
        {
          ...step(c.name, `Which company makes the ${c.product}?`, c.name, c.product, "manufacturer", c.product),
          query: c.product,
        },
        step(c.name, "Who founded #1?", c.founder.name, c.name, "founded by"),
        step(c.founder.name, "Where was #2 born?", c.founder.city.name, c.founder.name, "place of birth"),
      ],
    })),
  namesakeRiver: () =>
    awards
      .filter((a) => a.namedAfter.city.river)
      .map((a) => {
        const p = a.namedAfter;
        return {
          question: `Which river flows through the birthplace of the person after whom the ${a.name} is named?`,
          steps: [
            step(a.name, `After whom is the ${a.name} named?`, p.name, a.name, "named after"),
            step(p.name, "Where was #1 born?", p.city.name, p.name, "place of birth"),
            step(
              p.city.name,
              "Which river flows through #2?",
              p.city.river.name,
              p.city.name,
              "located next to body of water",
            ),
          ],
        };
      }),
  ascentUniversity: () =>
    mountains.map((m) => ({
      question: `At which university did the first person to climb ${m.name} study?`,
      steps: [
        step(m.name, `Who first climbed ${m.name}?`, m.ascent.by.name, m.name, "first ascent by"),
        step(m.ascent.by.name, "Where did #1 study?", m.ascent.by.university.name, m.ascent.by.name, "educated at"),
      ],
    })),
  publisherCity: () =>
    works.map((w) => ({
      question: `In which city is the publisher of ${w.name} headquartered?`,
      steps: [
        step(w.name, `Who published ${w.name}?`, w.publisher.name, w.name, "publisher"),
        step(
          w.publisher.name,
          "Where is #1 headquartered?",
          w.publisher.city.name,
          w.publisher.name,
          "headquarters location",
        ),
      ],
    })),
  // comparisons
  foundedFirst: () => {
    const out = [];
    const cs = shuffle(companies);
    for (let i = 0; i + 1 < cs.length; i += 2) {
      const [a, b] = [cs[i], cs[i + 1]];
      if (a.founded === b.founded) continue;
      out.push({
        comparison: true,
        question: `Which company was founded first, ${a.name} or ${b.name}?`,
        answer: a.founded < b.founded ? a.name : b.name,
        steps: [
          step(a.name, `When was ${a.name} founded?`, String(a.founded), a.name, "inception"),
          step(b.name, `When was ${b.name} founded?`, String(b.founded), b.name, "inception"),
        ],
      });
    }
    return out;
  },
  sameCountry: () => {
    const out = [];
    const cs = shuffle(cities);
    for (let i = 0; i + 1 < cs.length; i += 2) {
      let [a, b] = [cs[i], cs[i + 1]];
      if (i % 4 === 0) b = a.country.cities.find((x) => x !== a);
      out.push({
        comparison: true,
        question: `Are ${a.name} and ${b.name} located in the same country?`,
        answer: a.country === b.country ? "yes" : "no",
        steps: [
          step(a.name, `In which country is ${a.name}?`, a.country.name, a.name, "country"),
          step(b.name, `In which country is ${b.name}?`, b.country.name, b.name, "country"),
        ],
      });
    }
    return out;
  },
  authorBornFirst: () => {
    const out = [];
    const ws = shuffle(works);
    for (let i = 0; i + 1 < ws.length; i += 2) {
      const [a, b] = [ws[i], ws[i + 1]];
      if (a.author.born === b.author.born) continue;
      const first = a.author.born < b.author.born ? a.author : b.author;
      out.push({
        comparison: true,
        bridgeComparison: true,
        question: `Who was born first, the author of ${a.name} or the author of ${b.name}?`,
        answer: first.name,
        steps: [
          step(a.name, `Who wrote ${a.name}?`, a.author.name, a.name, "author"),
          step(b.name, `Who wrote ${b.name}?`, b.author.name, b.name, "author"),
          step(a.author.name, "When was #1 born?", String(a.author.born), a.author.name, "date of birth"),
          step(b.author.name, "When was #2 born?", String(b.author.born), b.author.name, "date of birth"),
        ],
      });
    }
    return out;
  },
};

const pools = Object.fromEntries(Object.entries(templates).map(([k, f]) => [k, shuffle(f())]));
const used = new Set();
function take(kinds, n) {
  const out = [];
  while (out.length < n) {
    let progressed = false;
    for (const k of kinds) {
      if (out.length >= n) break;
      const q = pools[k].find((x) => !used.has(x.question));
      if (!q) continue;
      used.add(q.question);
      out.push({ ...q, template: k });
      progressed = true;
    }
    if (!progressed) throw new Error(`not enough questions for ${kinds.join(",")}`);
  }
  return out;
}
const bridgeKinds = [
  "founderCountry",
  "birthRiver",
  "uniCapital",
  "awardEstablished",
  "sourceHeight",
  "authorCurrency",
  "productFounderCity",
  "namesakeRiver",
  "ascentUniversity",
  "publisherCity",
];
const allKinds = [...bridgeKinds, "foundedFirst", "sameCountry", "authorBornFirst"];

const answerOf = (q) => q.answer ?? q.steps[q.steps.length - 1].a;
const readsOf = (q) => {
  const seen = new Set();
  const reads = [];
  for (const s of q.steps) {
    if (seen.has(s.title)) continue;
    seen.add(s.title);
    reads.push({ query: s.query ?? s.title, title: s.title });
  }
  return reads;
};
const hops = (q) => readsOf(q).length;

// supporting facts / context in the dataset's own shape
function supporting(q) {
  return q.steps.map((s) => [s.title, sentIdx(s.title, s.needle)]);
}
function context(q, distractors = 2) {
  const titles = readsOf(q).map((r) => r.title);
  const others = shuffle([...articles.keys()].filter((t) => !titles.includes(t))).slice(0, distractors);
  return shuffle([...titles, ...others]).map((t) => [t, articles.get(t).sentences.map((s, i) => (i ? ` ${s}` : s))]);
}

const chains = {};
function register(q) {
  for (const s of q.steps) sentIdx(s.title, s.needle); // every step is stated in its article
  chains[q.question] = { reads: readsOf(q), answer: answerOf(q) };
}

const hotpot = take(allKinds, 10).map((q) => {
  register(q);
  return {
    _id: hexId(`hotpot:${q.question}`, 24),
    question: q.question,
    answer: answerOf(q),
    type: q.comparison ? "comparison" : "bridge",
    level: hops(q) >= 3 ? "hard" : "medium",
    supporting_facts: supporting(q),
    context: context(q),
  };
});
const twoWiki = take(allKinds.slice().reverse(), 8).map((q) => {
  register(q);
  return {
    _id: hexId(`2wiki:${q.question}`, 32),
    type: q.bridgeComparison ? "bridge_comparison" : q.comparison ? "comparison" : "compositional",
    question: q.question,
    context: context(q),
    supporting_facts: supporting(q),
    evidences: q.steps.map((s) => [s.subj, s.rel, s.a]),
    answer: answerOf(q),
  };
});
const musique = take(bridgeKinds, 8).map((q) => {
  register(q);
  const reads = readsOf(q).map((r) => r.title);
  const paras = context(q, 3).map(([title, sents], idx) => ({
    idx,
    title,
    paragraph_text: sents.join(""),
    is_supporting: reads.includes(title),
  }));
  const ids = q.steps.map((s) => Number.parseInt(fnv(s.q + s.a).slice(0, 5), 16));
  return {
    id: `${q.steps.length}hop1__${ids.join("_")}`,
    paragraphs: paras,
    question: q.question,
    question_decomposition: q.steps.map((s, i) => ({
      id: ids[i],
      question: s.q,
      answer: s.a,
      paragraph_support_idx: paras.findIndex((p) => p.title === s.title),
    })),
    answer: answerOf(q),
    answer_aliases: (q.aliases ?? []).filter((a) => a !== answerOf(q)),
    answerable: true,
  };
});
const bamboogle = take(bridgeKinds.slice(3), 6).map((q) => {
  register(q);
  return { Question: q.question, Answer: answerOf(q) };
});
const flashrag = take(allKinds, 8).map((q, i) => {
  register(q);
  const golden = [answerOf(q), ...(q.aliases ?? []).filter((a) => a !== answerOf(q))];
  return {
    id: `test_${i}`,
    question: q.question,
    golden_answers: golden,
    metadata: { type: q.template, hops: hops(q) },
  };
});
const plain = take(allKinds.slice(5), 4).map((q, i) => {
  register(q);
  return {
    id: `plain-${i}`,
    prompt: q.question,
    ground_truth: [answerOf(q), ...(q.aliases ?? []).filter((a) => a !== answerOf(q))],
  };
});

// ---------- write ----------
mkdirSync(OUT, { recursive: true });
const corpus = [...articles.values()].map((a) => ({ title: a.title, text: textOf(a), url: urlOf(a.title) }));
const jsonl = (rows) => `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`;
writeFileSync(join(OUT, "corpus.jsonl"), jsonl(corpus));
writeFileSync(join(OUT, "hotpotqa.json"), `${JSON.stringify(hotpot, null, 1)}\n`);
// the Hugging Face `hotpot_qa` layout of the same rows (as `datasets` writes it with to_json): id, and column-wise
// supporting_facts {title, sent_id} and context {title, sentences}
const hotpotHf = hotpot.map((r) => ({
  id: r._id,
  question: r.question,
  answer: r.answer,
  type: r.type,
  level: r.level,
  supporting_facts: { title: r.supporting_facts.map(([t]) => t), sent_id: r.supporting_facts.map(([, i]) => i) },
  context: { title: r.context.map(([t]) => t), sentences: r.context.map(([, s]) => s) },
}));
writeFileSync(join(OUT, "hotpotqa-hf.jsonl"), jsonl(hotpotHf));
writeFileSync(join(OUT, "2wikimultihopqa.json"), `${JSON.stringify(twoWiki, null, 1)}\n`);
writeFileSync(join(OUT, "musique.jsonl"), jsonl(musique));
writeFileSync(join(OUT, "bamboogle.json"), `${JSON.stringify(bamboogle, null, 1)}\n`);
writeFileSync(join(OUT, "flashrag.jsonl"), jsonl(flashrag));
writeFileSync(join(OUT, "plain.jsonl"), jsonl(plain));
writeFileSync(join(OUT, "chains.json"), `${JSON.stringify(chains, null, 1)}\n`);
const nq = hotpot.length + twoWiki.length + musique.length + bamboogle.length + flashrag.length + plain.length;
process.stderr.write(`wrote ${corpus.length} articles and ${nq} questions to ${OUT}\n`);
