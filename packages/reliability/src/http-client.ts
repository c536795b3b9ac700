import { request } from "node:http";

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any;
}

/**
 * A reply body as JSON, or undefined when it is not JSON. Streamable HTTP answers a POST as an SSE stream: then it is
 * the stream's first data line.
 */
export function replyJson(text: string): any {
  const data = text.startsWith("event:") || text.startsWith("data:") ? (/^data: (.*)$/m.exec(text)?.[1] ?? "") : text;
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/**
 * One HTTP request with the path sent verbatim (no URL normalisation, unlike fetch), so `..` segments and broken
 * percent-escapes reach the server as an attacker would send them.
 */
export function raw(
  base: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; chunked?: boolean } = {},
): Promise<RawResponse> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.body !== undefined && !options.chunked)
      headers["content-length"] = String(Buffer.byteLength(options.body));
    const req = request({ host: u.hostname, port: u.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text,
          json: () => JSON.parse(text),
        });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    if (options.body !== undefined) {
      if (options.chunked && Buffer.byteLength(options.body) > 0) {
        // several writes without content-length: chunked transfer encoding
        const buf = Buffer.from(options.body);
        const step = 64 * 1024;
        for (let i = 0; i < buf.length; i += step) req.write(buf.subarray(i, i + step));
      } else req.write(options.body);
    }
    req.end();
  });
}
