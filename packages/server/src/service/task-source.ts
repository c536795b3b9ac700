import { type EnvShape, type Task, TaskSchema } from "@benchmax/core";
import { checkHostPaths, resolveHostPaths } from "../host-paths.js";
import { badRequest, notFound } from "./service-error.js";

/** The dataset of an env without `loadTasks`. */
const NO_DATASET: readonly Task[] = [];

/**
 * How a caller names the task of a new rollout: a dataset task by id, an inline task (a Task, or any raw row the
 * env's `parseTask` accepts), a seed (OpenEnv's reset: the same seed always picks the same dataset task), or none of
 * them (the next task in turn).
 */
export interface TaskRef {
  taskId?: string;
  task?: unknown;
  seed?: number;
}

/** A client-built task: core's `TaskSchema`, with a prompt or messages and a `groundTruth` field. */
function isTaskShape(v: unknown): v is Task {
  const r = TaskSchema.safeParse(v);
  return r.success && (r.data.prompt !== undefined || r.data.messages !== undefined) && "groundTruth" in (v as object);
}

/** The tasks a service draws from, and the checks on tasks a client builds itself. */
export class TaskSource {
  private list?: Task[];
  private index?: Map<string, Task>;
  private loading?: Promise<Task[]>;
  private cursor = 0;
  /** Tasks a client supplied (not from the dataset): an env that rejects one is the client's fault. */
  private readonly inline = new WeakSet<Task>();

  constructor(
    private readonly env: EnvShape,
    tasks: Task[] | undefined,
    /** Client-built tasks may name host files only under this directory; without it, none. */
    private readonly dataRoot?: string,
  ) {
    if (tasks) this.set(tasks);
  }

  private set(tasks: Task[]): void {
    this.list = tasks;
    this.index = new Map(tasks.map((t) => [t.id, t]));
  }

  /** The env's default dataset (its fixtures unless the server was given tasks). */
  all(): Promise<Task[]> {
    if (this.list) return Promise.resolve(this.list);
    const tasks = this.env.capabilities?.tasks;
    if (!tasks?.loadTasks) return Promise.resolve([]);
    this.loading ??= tasks.loadTasks().then((t) => {
      this.set(t);
      return t;
    });
    return this.loading;
  }

  /** Was this task built by a client (rather than drawn from the dataset)? */
  isInline(task: Task): boolean {
    return this.inline.has(task);
  }

  /** The task a reference names. Bad references are `bad_request`; an unknown id `not_found`; host paths `forbidden`. */
  resolve(ref: TaskRef = {}): Promise<Task> {
    try {
      const t = this.resolveLoaded(ref);
      if (t) return Promise.resolve(t);
    } catch (e) {
      return Promise.reject(e);
    }
    // the dataset loads first; then the reference resolves (or throws) without waiting
    return this.all().then(() => this.resolveLoaded(ref) as Task);
  }

  /**
   * `resolve` without a promise where no wait is needed: the task, or undefined while the dataset it needs has not
   * loaded (then call `resolve`). Throws what `resolve` rejects with.
   */
  resolveLoaded(ref: TaskRef = {}): Task | undefined {
    const { seed, taskId } = ref;
    if (seed !== undefined && seed !== null) {
      if (typeof seed !== "number" || !Number.isInteger(seed) || seed < 0) {
        throw badRequest(
          `"seed" must be an integer >= 0, got ${JSON.stringify(seed)}`,
          "VALIDATION_ERROR",
          ["body", "seed"],
          seed,
        );
      }
    }
    if (taskId !== undefined && typeof taskId !== "string") throw badRequest(`"taskId" must be a string`);
    // an env without a dataset has an empty one, loaded
    const all = this.list ?? (this.env.capabilities?.tasks?.loadTasks ? undefined : NO_DATASET);
    if (taskId !== undefined) {
      if (!all) return undefined;
      const t = this.index?.get(taskId);
      if (t) return t;
      if (ref.task === undefined)
        throw notFound(`unknown task id "${taskId}" in ${this.env.name}'s dataset`, "UNKNOWN_TASK");
    }
    if (ref.task !== undefined) return this.fromClient(ref.task);
    if (!all) return undefined;
    if (all.length === 0) throw badRequest(`${this.env.name} has no default dataset: name a "task"`, "NO_TASKS");
    if (typeof seed === "number") return all[seed % all.length]!;
    return all[this.cursor++ % all.length]!;
  }

  private fromClient(row: unknown): Task {
    checkHostPaths(row, this.dataRoot);
    // relative host paths count from the data root (portable SkyRL exports)
    const raw = resolveHostPaths(row, this.dataRoot);
    if (isTaskShape(raw)) {
      this.inline.add(raw);
      return raw;
    }
    const parser = this.env.capabilities?.tasks;
    if (!parser?.parseTask) {
      throw badRequest(`"task" must be {id, prompt | messages, groundTruth} (${this.env.name} has no parseTask)`);
    }
    let task: Task;
    try {
      task = parser.parseTask(raw, "task");
    } catch (e) {
      // whatever the parser chokes on is the row's fault
      throw badRequest(e instanceof Error ? e.message : String(e));
    }
    if (!isTaskShape(task)) throw badRequest(`"task" did not parse into {id, prompt | messages, groundTruth}`);
    checkHostPaths(task, this.dataRoot);
    this.inline.add(task);
    return task;
  }
}
