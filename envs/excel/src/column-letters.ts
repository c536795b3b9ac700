/** Spreadsheet column letters ↔ 1-based column numbers (`A` = 1, `Z` = 26, `AA` = 27, `XFD` = 16384). */

/** The column number of upper-case letters (`AB` → 28). */
export function columnIndex(letters: string): number {
  let n = 0;
  for (let i = 0; i < letters.length; i++) n = n * 26 + (letters.charCodeAt(i) - 64);
  return n;
}

/** The letters of a column number (28 → `AB`). */
export function columnLetters(n: number): string {
  let s = "";
  while (n > 0) {
    const r = (n - 1) % 26;
    s = String.fromCharCode(65 + r) + s;
    n = Math.floor((n - 1) / 26);
  }
  return s;
}
