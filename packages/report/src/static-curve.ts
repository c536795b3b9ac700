import { escapeHtml } from "./html-escape.js";

/** One line of a static chart: its legend label, its colour, and a value (or a gap) per x. */
export interface StaticLine {
  label: string;
  color: string;
  data: (number | null)[];
}

const W = 600;
const H = 240;
const LEFT = 34;
const RIGHT = W - 8;
const TOP = 30;
const BOTTOM = H - 22;
const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(2));

/**
 * A line chart as inline SVG, drawn by the server into the page so the browser paints the curve with the HTML, before
 * any script runs (the watch page's first paint; chart.js replaces it once loaded). Same layout as the page's chart.js
 * lines: one x slot per point (a category axis), y from 0 to at least `yMax`, gaps spanned.
 */
export function staticLineChart(x: number[], lines: StaticLine[], yMax = 1, xTitle = ""): string {
  let top = yMax;
  for (const l of lines) for (const v of l.data) if (typeof v === "number" && Number.isFinite(v) && v > top) top = v;
  const n = x.length;
  const px = (i: number) => (n <= 1 ? (LEFT + RIGHT) / 2 : LEFT + ((RIGHT - LEFT) * i) / (n - 1));
  const py = (v: number) => BOTTOM - ((BOTTOM - TOP) * Math.max(0, v)) / (top || 1);
  const out: string[] = [];
  for (const t of [0, top / 2, top]) {
    const y = py(t).toFixed(1);
    out.push(`<line x1="${LEFT}" x2="${RIGHT}" y1="${y}" y2="${y}" stroke="#e3e6ec"/>`);
    out.push(`<text x="${LEFT - 4}" y="${y}" text-anchor="end" dominant-baseline="middle">${fmt(t)}</text>`);
  }
  if (n) {
    out.push(`<text x="${LEFT}" y="${H - 6}">${escapeHtml(String(x[0]))}</text>`);
    if (n > 1) out.push(`<text x="${RIGHT}" y="${H - 6}" text-anchor="end">${escapeHtml(String(x[n - 1]))}</text>`);
  }
  if (xTitle)
    out.push(`<text x="${(LEFT + RIGHT) / 2}" y="${H - 6}" text-anchor="middle">${escapeHtml(xTitle)}</text>`);
  let lx = LEFT;
  for (const l of lines) {
    const color = escapeHtml(l.color);
    out.push(`<rect x="${lx}" y="8" width="14" height="8" fill="${color}"/>`);
    out.push(`<text x="${lx + 18}" y="16">${escapeHtml(l.label)}</text>`);
    lx += 30 + l.label.length * 6;
    let d = "";
    for (let i = 0; i < n; i++) {
      const v = l.data[i];
      if (typeof v !== "number" || !Number.isFinite(v)) continue;
      d += `${d ? "L" : "M"}${px(i).toFixed(1)} ${py(v).toFixed(1)}`;
    }
    if (d) out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.5"/>`);
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="100%" height="100%" font-size="10" font-family="system-ui, sans-serif" fill="#5b6475">${out.join("")}</svg>`;
}
