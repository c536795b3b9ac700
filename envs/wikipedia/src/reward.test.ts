import { describe, expect, it } from "vitest";
import { explainAnswer, scoreAnswer } from "./reward.js";

describe("scoreAnswer", () => {
  it("scores the last <answer> tag against every alias", () => {
    const r = scoreAnswer("<answer>wrong</answer> thinking… <answer>The Valdorian Crown.</answer>", [
      "x",
      "Valdorian crown",
    ]);
    expect(r).toEqual({ exact_match: 1, f1: 1, format: 1 });
  });
  it("gives partial F1 and no EM for a longer answer", () => {
    const r = scoreAnswer("<answer>Arlo Venn of Halvorn</answer>", ["Arlo Venn"]);
    expect(r.exact_match).toBe(0);
    expect(r.f1).toBeCloseTo(2 / 3, 12);
    expect(r.format).toBe(1);
  });
  it("scores 0 everywhere without an answer tag", () => {
    expect(scoreAnswer("Arlo Venn", ["Arlo Venn"])).toEqual({ exact_match: 0, f1: 0, format: 0 });
  });
  it("applies the yes/no rule", () => {
    expect(scoreAnswer("<answer>yes</answer>", ["no"])).toEqual({ exact_match: 0, f1: 0, format: 1 });
    expect(scoreAnswer("<answer>Yes.</answer>", ["yes"])).toEqual({ exact_match: 1, f1: 1, format: 1 });
  });
});

describe("explainAnswer", () => {
  it("shows the tagged answer and every gold alias, normalised as the metric reads them", () => {
    const x = explainAnswer("<answer>The Beatles!</answer>", ["the beatles", "Beatles"]);
    expect(x.extracted).toBe("The Beatles!");
    expect(x.gold).toBe("the beatles | Beatles");
    expect(x.diff).toEqual([
      'normalised answer: "beatles"',
      'normalised gold: "beatles" (match)',
      'normalised gold: "beatles" (match)',
    ]);
    expect(explainAnswer("no tag", ["x"]).extracted).toBe("(no <answer> tag)");
  });
});
