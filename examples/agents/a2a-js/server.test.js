// The agent's own tests (node:test), over a real socket and the raw A2A 1.0 JSON-RPC wire format
// the supervisor sends: the card, a completed task with its data artifact, a question when the
// city is missing, and the refusal of an unsupported A2A-Version.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { agentApp } from "./server.js";

let server;
let base = "";

before(async () => {
  await new Promise((resolve) => {
    // The card must name the address actually bound: build the app once the port is known.
    const probe = agentApp("http://127.0.0.1:0").listen(0, "127.0.0.1", () => {
      const port = probe.address().port;
      probe.close(() => {
        base = `http://127.0.0.1:${port}`;
        server = agentApp(base).listen(port, "127.0.0.1", resolve);
      });
    });
  });
});
after(() => server?.close());

async function rpc(method, params, version = "1.0") {
  const resp = await fetch(`${base}/a2a/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json", "A2A-Version": version },
    body: JSON.stringify({ jsonrpc: "2.0", id: "1", method, params }),
  });
  assert.equal(resp.status, 200);
  return resp.json();
}

/** A message as the supervisor builds it: the request as text, the inputs as one data part. */
const message = (text, inputs) => ({
  message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }, ...(inputs ? [{ data: inputs }] : [])] },
});

test("the agent card names the JSONRPC interface and streaming", async () => {
  const card = await (await fetch(`${base}/.well-known/agent-card.json`)).json();
  assert.equal(card.supportedInterfaces[0].protocolBinding, "JSONRPC");
  assert.equal(card.supportedInterfaces[0].url, `${base}/a2a/jsonrpc`);
  assert.equal(card.capabilities.streaming, true);
  assert.ok(card.skills.length > 0);
});

test("a message with a city completes with the list as a data artifact", async () => {
  const reply = await rpc("SendMessage", message("去三亚住两晚要带什么", { city: "Sanya", nights: 2 }));
  const task = reply.result.task;
  assert.equal(task.status.state, "TASK_STATE_COMPLETED");
  const data = task.artifacts[0].parts.find((p) => p.data).data;
  assert.equal(data.city, "Sanya");
  assert.equal(data.nights, 2);
  assert.ok(data.items.includes("sunscreen"));
  assert.match(task.status.message.parts[0].text, /^去Sanya住 2 晚/);
});

test("no city: the agent asks (INPUT_REQUIRED), and the answer continues the task", async () => {
  const first = (await rpc("SendMessage", message("What should I pack?"))).result.task;
  assert.equal(first.status.state, "TASK_STATE_INPUT_REQUIRED");
  const answer = message("Xiamen");
  answer.message.taskId = first.id;
  answer.message.contextId = first.contextId;
  const done = (await rpc("SendMessage", answer)).result.task;
  assert.equal(done.status.state, "TASK_STATE_COMPLETED");
  assert.equal(done.artifacts.at(-1).parts[0].data.city, "Xiamen");
});

test("an unsupported A2A-Version is refused with -32009", async () => {
  const reply = await rpc("SendMessage", message("pack for Beijing", { city: "北京" }), "99.0");
  assert.equal(reply.error.code, -32009);
});
