// Real AG-UI streams of `switchboard demo`, validated by @ag-ui/core's schemas and run through
// @ag-ui/client's HttpAgent (verifier on): a DAG turn, a blocked turn resumed, a cancel, an
// escalation.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { buildResumeArray } from "@ag-ui/client";
import { startDemo } from "./demo.mjs";
import { agent, daysFromNow, run, schemaProblems } from "./agui.mjs";

let demo;
before(async () => {
  demo = await startDemo();
});
after(async () => {
  await demo?.stop();
});

/** Every raw event valid, the client saw them all, and it warned about nothing. */
function checked(r) {
  assert.deepEqual(r.wire.flatMap(schemaProblems), []);
  assert.equal(r.events.length, r.wire.length, "the client passed every event on");
  assert.deepEqual(r.warnings, [], "the client stripped or dropped nothing");
  assert.equal(r.wire[0].type, "RUN_STARTED");
  assert.equal(r.wire[1].type, "STATE_SNAPSHOT");
  assert.ok(r.finished, "the run finished");
  return r;
}

const types = (events, type) => events.filter((e) => e.type === type);

test("a DAG turn: two sub-agent runs, the plan done, the answer", async () => {
  const a = agent(demo.base, "web-dag");
  a.addMessage({ id: "m1", role: "user", content: "帮我查一下航班CA1234，然后安排白云机场接机" });
  const r = checked(await run(a));
  assert.equal(r.finished.outcome.type, "success");
  const started = types(r.wire, "SUBAGENT_STARTED");
  assert.deepEqual(started.map((e) => e.name), ["flight_agent", "pickup_agent"]);
  assert.equal(types(r.wire, "SUBAGENT_FINISHED").length, 2);
  // The client applied every ACTIVITY_DELTA to the plan snapshot.
  const plan = a.messages.find((m) => m.role === "activity" && m.activityType === "PLAN");
  assert.deepEqual(plan.content.sub_tasks.map((t) => t.status), ["done", "done"]);
  // Sub-agent messages keep their attribution; the answer is the parent's.
  for (const s of started) {
    const msg = a.messages.find((m) => m.id === s.subagentRunId);
    assert.equal(msg.subagentRunId, s.subagentRunId);
    assert.ok(msg.content.length > 0);
  }
  const answer = a.messages.find((m) => m.id.startsWith("answer_"));
  assert.match(answer.content, /CA1234/);
  assert.ok(a.messages.some((m) => m.role === "reasoning"), "the thinking texts");
  assert.equal(a.state.conversation.slots.flight_no, "CA1234", "STATE_DELTA applied");
});

test("a blocked turn resumed through resume", async () => {
  const a = agent(demo.base, "web-resume");
  a.addMessage({ id: "m1", role: "user", content: "帮我订个酒店" });
  const first = checked(await run(a));
  assert.equal(first.finished.outcome.type, "interrupt");
  assert.equal(a.pendingInterrupts.length, 1);
  const [interrupt] = a.pendingInterrupts;
  assert.deepEqual(interrupt.responseSchema.required, ["city", "check_in_date"]);
  assert.deepEqual(a.state.conversation.pending.keys, ["city", "check_in_date"]);
  assert.equal(a.state.conversation.pending.expires_at, interrupt.expiresAt);
  const resume = buildResumeArray(a.pendingInterrupts, {
    [interrupt.id]: { status: "resolved", payload: { city: "北京", check_in_date: daysFromNow(7) } },
  });
  const second = checked(await run(a, { resume }));
  assert.equal(second.finished.outcome.type, "success");
  assert.equal(a.pendingInterrupts.length, 0);
  const hotel = types(second.wire, "SUBAGENT_STARTED").find((e) => e.name === "hotel_agent");
  assert.equal(hotel.subagentRunId, interrupt.id, "the blocked sub-task ran");
  assert.equal(a.state.conversation.pending, null);
  assert.equal(a.state.conversation.slots.city, "北京");
});

test("a cancelled interrupt drops the pending booking", async () => {
  const a = agent(demo.base, "web-cancel");
  a.addMessage({ id: "m1", role: "user", content: "帮我订个酒店" });
  checked(await run(a));
  const resume = buildResumeArray(a.pendingInterrupts, { [a.pendingInterrupts[0].id]: { status: "cancelled" } });
  const r = checked(await run(a, { resume }));
  assert.equal(r.finished.outcome.type, "success");
  assert.equal(types(r.wire, "SUBAGENT_STARTED").length, 0, "nothing ran");
  assert.equal(a.state.conversation.pending, null);
  assert.equal(a.state.conversation.status, "idle");
});

test("an escalation ends the run with the escalation card", async () => {
  const a = agent(demo.base, "web-escalate");
  a.addMessage({ id: "m1", role: "user", content: "我要转人工" });
  const r = checked(await run(a));
  assert.equal(r.finished.outcome.type, "success");
  assert.equal(r.finished.result.escalation.reason, "user_requested");
  assert.equal(a.state.conversation.status, "escalated");
});

test("a did-you-mean question, answered by picking a candidate", async () => {
  const a = agent(demo.base, "web-choice");
  a.addMessage({ id: "m1", role: "user", content: "我明天要去上海" });
  const first = checked(await run(a));
  assert.equal(first.finished.outcome.type, "interrupt");
  const [choice] = a.pendingInterrupts;
  assert.ok(choice.responseSchema.properties.intent.enum.includes("weather_agent"));
  assert.equal(a.state.conversation.status, "awaiting_choice");
  assert.equal(a.state.conversation.choice.choice_id, choice.id);
  const resume = buildResumeArray(a.pendingInterrupts, { [choice.id]: { status: "resolved", payload: { intent: "weather_agent" } } });
  const second = checked(await run(a, { resume }));
  assert.equal(second.finished.outcome.type, "success");
  assert.deepEqual(types(second.wire, "SUBAGENT_STARTED").map((e) => e.name), ["weather_agent"]);
  assert.equal(a.state.conversation.choice, null);
});
