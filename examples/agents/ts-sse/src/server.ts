// packing_agent: a Switchboard sub-agent speaking protocol `sse` (docs/sub-agent-protocol.md) on
// plain node:http.
//
// POST /invoke with the supervisor's request body and `Accept: text/event-stream`; answer 200
// `text/event-stream` with `delta` events ({"text": ...}, shown to the user at once), then exactly
// one `result` event (the `http` reply body {"output", "message"}), or one `error` event
// ({"message": ...}). A body that is not JSON or whose inputs are unusable gets a 4xx at once,
// before any stream starts.
//
//   PORT=9203 node dist/server.js

import { createServer, IncomingMessage, Server, ServerResponse } from "node:http";
import { pathToFileURL } from "node:url";

import { isChinese, packingList, replyText } from "./packing.js";

/** Largest request body accepted (the supervisor's requests are small). */
const MAX_BODY = 1024 * 1024;
/** Pause between progress events (a real agent is doing work here). */
const STEP_MS = 50;

/** The request body of every protocol. */
interface InvokeRequest {
  task_id: string;
  plan_id?: string;
  session_id?: string;
  user_id?: string;
  thread_id?: string;
  message?: string;
  inputs: { message?: string; city: string; nights?: number };
  context?: { dependencies?: Record<string, unknown> };
}

class BadRequest extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { code, message } }));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new BadRequest(413, "payload_too_large", `the body is over ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Parses and checks the request; a problem is a 400 (not JSON) or 422 (unusable inputs). */
function parse(text: string): InvokeRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw new BadRequest(400, "bad_request", `the body is not valid JSON: ${(e as Error).message}`);
  }
  const req = body as InvokeRequest;
  if (typeof req !== "object" || req === null || typeof req.inputs !== "object" || req.inputs === null) {
    throw new BadRequest(400, "bad_request", "the body must be an object with `inputs`");
  }
  if (typeof req.inputs.city !== "string" || req.inputs.city.length === 0) {
    throw new BadRequest(422, "invalid_inputs", "inputs.city must be a non-empty string");
  }
  const n = req.inputs.nights;
  if (n !== undefined && !(Number.isInteger(n) && n >= 1 && n <= 30)) {
    throw new BadRequest(422, "invalid_inputs", "inputs.nights must be an integer from 1 to 30");
  }
  return req;
}

/** `inputs.nights`, else a `nights` an upstream sub-task produced (a hotel booking), else 3. */
function nightsOf(req: InvokeRequest): number {
  if (req.inputs.nights !== undefined) return req.inputs.nights;
  for (const output of Object.values(req.context?.dependencies ?? {})) {
    const n = (output as { nights?: unknown } | null)?.nights;
    if (typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= 30) return n;
  }
  return 3;
}

/** One SSE event: `event:` line, one `data:` line of compact JSON (UTF-8), blank line. Keep each
 * event's data under 1 MiB and the whole stream under 8 MiB. */
function event(res: ServerResponse, name: string, data: unknown): void {
  res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One sub-task. The supervisor sends a request once and never retries after a delta reached the
 * user, so acting on first receipt is safe. */
async function invoke(req: InvokeRequest, res: ServerResponse): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  const chinese = isChinese(req.message ?? "");
  try {
    const city = req.inputs.city;
    const nights = nightsOf(req);
    event(res, "delta", { text: chinese ? `正在查看${city}的天气…` : `Checking the weather in ${city}…` });
    await sleep(STEP_MS);
    const items = packingList(city, nights);
    event(res, "delta", { text: chinese ? `已列出 ${items.length} 件物品。` : `Listed ${items.length} items.` });
    await sleep(STEP_MS);
    event(res, "result", { output: { city, nights, items }, message: replyText(city, nights, items, chinese) });
  } catch (e) {
    event(res, "error", { message: `packing list failed: ${(e as Error).message}` });
  }
  res.end();
}

/** The agent's HTTP server: POST /invoke, GET /healthz. */
export function agentServer(): Server {
  return createServer(async (req, res) => {
    try {
      if (req.method === "GET" && req.url === "/healthz") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ status: "ok" }));
        return;
      }
      if (req.url !== "/invoke") return sendError(res, 404, "not_found", "use POST /invoke");
      if (req.method !== "POST") return sendError(res, 405, "method_not_allowed", "use POST /invoke");
      await invoke(parse(await readBody(req)), res);
    } catch (e) {
      if (e instanceof BadRequest) return sendError(res, e.status, e.code, e.message);
      if (!res.headersSent) sendError(res, 500, "internal", "internal error");
      else res.end();
    }
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const port = Number(process.env.PORT ?? 9203);
  const host = process.env.HOST ?? "127.0.0.1";
  agentServer().listen(port, host, () => console.log(`packing_agent (sse) listening on http://${host}:${port}/invoke`));
}
