// Runs AG-UI turns against a running supervisor through @ag-ui/client's HttpAgent (its
// enforcement and verifier always run) while keeping the raw wire events of the same run, each
// checked against @ag-ui/core's EventSchema with no field the schema does not name.
import { HttpAgent, randomUUID } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";

const shapes = new Map(EventSchema.options.map((s) => [s.shape.type.value, s]));

/** Problems of one wire event against @ag-ui/core's schemas (empty when valid). */
export function schemaProblems(event) {
  const schema = shapes.get(event.type);
  if (!schema) return [`unknown event type ${event.type}`];
  const problems = [];
  const parsed = schema.safeParse(event);
  if (!parsed.success) problems.push(...parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`));
  for (const key of Object.keys(event)) {
    if (!(key in schema.shape)) problems.push(`field ${key} is not in the ${event.type} schema`);
  }
  return problems.map((p) => `${event.type}: ${p}`);
}

function parseSse(text) {
  return text
    .split(/\n\n/)
    .map((frame) => frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n"))
    .filter(Boolean)
    .map((d) => JSON.parse(d));
}

/** An HttpAgent for `user` on a new thread; `agent.wire` holds each run's raw events. */
export function agent(base, user) {
  const wire = [];
  const tee = async (url, init) => {
    const res = await fetch(url, init);
    if (!res.ok || !res.body) return res;
    const [mine, theirs] = res.body.tee();
    const run = new Response(theirs).text().then(parseSse);
    wire.push(run);
    return new Response(mine, { status: res.status, headers: res.headers });
  };
  const a = new HttpAgent({ url: `${base}/v1/ag-ui`, headers: { "x-user-id": user }, threadId: `web-${randomUUID()}`, fetch: tee });
  a.wire = wire;
  return a;
}

/**
 * One run: `{events, wire, finished, warnings}` — the events subscribers saw, the raw events,
 * the RUN_FINISHED event, and every warning the client printed (it warns when it strips or drops
 * something it does not recognise). Throws what the verifier throws.
 */
export async function run(a, params = {}) {
  const events = [];
  const warnings = [];
  const { warn, error } = console;
  console.warn = (...args) => warnings.push(args.join(" "));
  console.error = (...args) => warnings.push(args.join(" "));
  let finished;
  try {
    await a.runAgent({ runId: randomUUID(), ...params }, {
      onEvent: ({ event }) => {
        events.push(event);
      },
      onRunFinishedEvent: ({ event }) => {
        finished = event;
      },
      onRunErrorEvent: ({ event }) => {
        throw new Error(`RUN_ERROR ${event.message}`);
      },
    });
  } finally {
    console.warn = warn;
    console.error = error;
  }
  const wire = await a.wire[a.wire.length - 1];
  return { events, wire, finished, warnings };
}

/** A date `days` from today, YYYY-MM-DD. */
export function daysFromNow(days) {
  return new Date(Date.now() + days * 86400e3).toISOString().slice(0, 10);
}
