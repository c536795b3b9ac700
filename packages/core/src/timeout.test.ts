import { afterEach, describe, expect, it, vi } from "vitest";
import { startLimit, stopLimit, withTimeout } from "./timeout.js";

const never = <T>() => new Promise<T>(() => {});

describe("withTimeout", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("passes a value or an error through, and needs a positive finite limit to limit anything", async () => {
    await expect(withTimeout(Promise.resolve(1), 5, () => new Error("late"))).resolves.toBe(1);
    await expect(withTimeout(Promise.reject(new Error("own")), 5, () => new Error("late"))).rejects.toThrow("own");
    const p = Promise.resolve(2);
    expect(withTimeout(p, 0, () => new Error("x"))).toBe(p);
    expect(withTimeout(p, Number.POSITIVE_INFINITY, () => new Error("x"))).toBe(p);
  });

  it("rejects a promise that never settles once a short limit passes", async () => {
    await expect(withTimeout(never(), 5, () => new Error("too slow"))).rejects.toThrow("too slow");
  });

  it("long limits share one timer, fire (never early) and leave no timer behind", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance"] });
    let fired = false;
    const hung = withTimeout(never(), 5000, () => new Error("limit")).catch((e: Error) => {
      fired = true;
      return e.message;
    });
    const quick = withTimeout(Promise.resolve("ok"), 60_000, () => new Error("no"));
    const many = Array.from({ length: 100 }, () => withTimeout(never(), 5000, () => new Error("limit")).catch(() => 0));
    expect(vi.getTimerCount()).toBe(1);
    await expect(quick).resolves.toBe("ok");
    await vi.advanceTimersByTimeAsync(4900);
    expect(fired).toBe(false);
    await vi.advanceTimersByTimeAsync(300);
    expect(await hung).toBe("limit");
    await Promise.all(many);
    await vi.advanceTimersByTimeAsync(200);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a stopped limit does not fire", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance"] });
    let fired = 0;
    const a = startLimit(2000, () => fired++);
    const b = startLimit(10, () => fired++);
    stopLimit(a);
    stopLimit(b);
    await vi.advanceTimersByTimeAsync(3000);
    expect(fired).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("limits of several durations each fire once due (never early), and one stopped mid-lane leaves its neighbours armed", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance"] });
    const fired: string[] = [];
    const a = startLimit(2000, () => fired.push("a"));
    const b = startLimit(2000, () => fired.push("b"));
    startLimit(2000, () => fired.push("c"));
    startLimit(1500, () => fired.push("short"));
    await vi.advanceTimersByTimeAsync(1000);
    startLimit(2000, () => fired.push("d"));
    stopLimit(b);
    stopLimit(b); // stopping twice is harmless
    await vi.advanceTimersByTimeAsync(1100);
    expect(fired).toEqual(["short", "a", "c"]);
    stopLimit(a); // after it fired: a no-op
    await vi.advanceTimersByTimeAsync(1000);
    expect(fired).toEqual(["short", "a", "c", "d"]);
    await vi.advanceTimersByTimeAsync(200);
    expect(vi.getTimerCount()).toBe(0);
  });
});
