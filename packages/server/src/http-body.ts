import type { IncomingMessage } from "node:http";
import { HttpError } from "./http-error.js";
import { badRequest } from "./service/service-error.js";

/** A request body read as one JSON object, under the server's body limit (`maxBodyBytes`). */
export function readBody(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  return read(req, limit, parseBody);
}

/** A request body's JSON object (`{}` for an empty body). */
function parseBody(text: string): Record<string, unknown> {
  if (text.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new HttpError(
      400,
      "INVALID_JSON",
      `malformed JSON body: ${(e as Error).message}`,
      ["body"],
      text.slice(0, 200),
    );
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    throw badRequest("request body must be a JSON object", "VALIDATION_ERROR", ["body"], v);
  }
  return v as Record<string, unknown>;
}

/** A request body's text; over `limit` bytes (declared or read) it is 413 PAYLOAD_TOO_LARGE. */
export function readText(req: IncomingMessage, limit: number): Promise<string> {
  return read(req, limit, asText);
}

const asText = (text: string) => text;

/**
 * A request body under `limit` bytes, read and mapped by `as` in the same turn it ends (no second promise for the
 * parse: this is every request's path); what `as` throws rejects the promise.
 */
function read<T>(req: IncomingMessage, limit: number, as: (text: string) => T): Promise<T> {
  const declared = Number(req.headers["content-length"]);
  if (declared > limit) {
    return Promise.reject(new HttpError(413, "PAYLOAD_TOO_LARGE", `request body over ${limit} bytes`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on("data", (c: Buffer) => {
      if (failed) return;
      size += c.length;
      if (size > limit) {
        failed = true;
        reject(new HttpError(413, "PAYLOAD_TOO_LARGE", `request body over ${limit} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on("error", (e) => {
      if (!failed) reject(new HttpError(400, "BAD_REQUEST", `could not read body: ${e.message}`));
    });
    req.on("end", () => {
      if (failed) return;
      const text =
        size === 0 ? "" : chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8");
      try {
        resolve(as(text));
      } catch (e) {
        reject(e);
      }
    });
  });
}
