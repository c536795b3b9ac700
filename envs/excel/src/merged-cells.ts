/**
 * Which cells of some rectangles the merged ranges of a sheet hide (every cell of a merge but its top-left, which
 * openpyxl reads as None), in time linear in the merges and the rectangles' area: a model's sheet may hold millions
 * of `<mergeCell>`s, and testing each against each compared cell was their product.
 */
import { columnIndex } from "./column-letters.js";

interface Area {
  minRow: number;
  minCol: number;
  maxRow: number;
  maxCol: number;
}

const COORD = /^([A-Z]{1,3})(\d+)$/;

/** A merged range's `ref` (`A1:B2`, or one cell), or undefined when it is not one. */
export function mergeArea(ref: string): Area | undefined {
  const [a, b] = ref.split(":", 2);
  const ma = COORD.exec(a ?? "");
  const mb = COORD.exec(b ?? a ?? "");
  if (!ma || !mb) return undefined;
  return { minCol: columnIndex(ma[1]!), minRow: Number(ma[2]), maxCol: columnIndex(mb[1]!), maxRow: Number(mb[2]) };
}

/** Most cells a rectangle may have to be counted in a table (larger ones test each merge, as before). */
const MAX_TABLE = 4_000_000;

interface Table {
  r: Area;
  w: number;
  diff: Int32Array;
  sums?: Int32Array;
}

export class HiddenCells {
  private readonly tables: Table[] = [];
  private readonly large: Area[] = [];
  private readonly largeMerges: Area[] = [];

  constructor(rects: readonly Area[]) {
    for (const r of rects) {
      const h = r.maxRow - r.minRow + 1;
      const w = r.maxCol - r.minCol + 1;
      if (h <= 0 || w <= 0) continue;
      if (h * w <= MAX_TABLE) this.tables.push({ r, w, diff: new Int32Array((h + 1) * (w + 1)) });
      else this.large.push(r);
    }
  }

  /** Record one merged range by its `ref`. */
  add(ref: string): void {
    const m = mergeArea(ref);
    if (!m) return;
    for (const t of this.tables) {
      const r1 = Math.max(m.minRow, t.r.minRow);
      const r2 = Math.min(m.maxRow, t.r.maxRow);
      const c1 = Math.max(m.minCol, t.r.minCol);
      const c2 = Math.min(m.maxCol, t.r.maxCol);
      if (r1 > r2 || c1 > c2) continue;
      this.bump(t, r1, c1, r2, c2, 1);
      if (m.minRow === r1 && m.minCol === c1) this.bump(t, r1, c1, r1, c1, -1); // the top-left keeps its value
    }
    if (this.large.length) this.largeMerges.push(m);
  }

  private bump(t: Table, r1: number, c1: number, r2: number, c2: number, d: number): void {
    const w = t.w + 1;
    const y1 = r1 - t.r.minRow;
    const x1 = c1 - t.r.minCol;
    const y2 = r2 - t.r.minRow + 1;
    const x2 = c2 - t.r.minCol + 1;
    t.diff[y1 * w + x1]! += d;
    t.diff[y1 * w + x2]! -= d;
    t.diff[y2 * w + x1]! -= d;
    t.diff[y2 * w + x2]! += d;
    t.sums = undefined;
  }

  /** Whether a merge hides this cell (it lies inside one and is not that merge's top-left). */
  has(row: number, col: number): boolean {
    for (const t of this.tables) {
      const { r } = t;
      if (row < r.minRow || row > r.maxRow || col < r.minCol || col > r.maxCol) continue;
      t.sums ??= prefixSums(t);
      if (t.sums[(row - r.minRow) * (t.w + 1) + (col - r.minCol)]! > 0) return true;
    }
    for (const m of this.largeMerges) {
      if (
        row >= m.minRow &&
        row <= m.maxRow &&
        col >= m.minCol &&
        col <= m.maxCol &&
        !(row === m.minRow && col === m.minCol)
      )
        return true;
    }
    return false;
  }
}

function prefixSums(t: Table): Int32Array {
  const w = t.w + 1;
  const h = t.diff.length / w;
  const s = Int32Array.from(t.diff);
  for (let y = 0; y < h; y++) for (let x = 1; x < w; x++) s[y * w + x]! += s[y * w + x - 1]!;
  for (let y = 1; y < h; y++) for (let x = 0; x < w; x++) s[y * w + x]! += s[(y - 1) * w + x]!;
  return s;
}
