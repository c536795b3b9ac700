import type { IncomingMessage, ServerResponse } from "node:http";
import { errorMessage } from "@benchmax/core";
import { classify, isOpenEnvValidation } from "./error-codes.js";
import { validationDetail } from "./http-error.js";
import type { ServerMetrics } from "./metrics.js";
import type { AnswerWriters } from "./transports/host-context.js";
import { isOpenEnvRoute } from "./transports/openenv-http.js";

const JSON_TYPE = "application/json";

/** The answer writers of one server: every answer carries its `x-benchmax-instance`. */
export function answerWriters(metrics: ServerMetrics, instance: string): AnswerWriters {
  const send = (res: ServerResponse, status: number, body: unknown) => sendJson(res, status, JSON.stringify(body));
  /** Answer with JSON text already serialized. */
  const sendJson = (res: ServerResponse, status: number, text: string) => {
    if (status >= 500) metrics.serverErrors++;
    else if (status >= 400) metrics.clientErrors++;
    // a flat [name, value, …] list: no header object to walk on the hot path
    res.writeHead(status, [
      "content-type",
      JSON_TYPE,
      "content-length",
      String(Buffer.byteLength(text)),
      "x-benchmax-instance",
      instance,
    ]);
    res.end(text);
  };

  const sendError = (res: ServerResponse, e: unknown, req?: IncomingMessage) => {
    if (req && isOpenEnvRoute(req.url) && isOpenEnvValidation(e)) {
      return send(res, 422, validationDetail(e));
    }
    const { status, code, type } = classify(e);
    metrics.prom?.error(code);
    if (status === 413) res.setHeader("connection", "close");
    if (status === 503) res.setHeader("retry-after", "1");
    send(res, status, { error: { message: errorMessage(e), code, type } });
  };
  return { send, sendJson, sendError };
}
