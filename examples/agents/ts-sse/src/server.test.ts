// The agent's own tests (node:test): the event stream's framing, dependencies, optional fields and
// bad requests, over a real socket.

import assert from "node:assert/strict";
import { AddressInfo } from "node:net";
import { after, before, test } from "node:test";

import { agentServer } from "./server.js";

const server = agentServer();
let url = "";

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/invoke`;
});
after(() => server.close());

function body(inputs: object, dependencies: object = {}, message = "去北京住三晚要带什么") {
  return JSON.stringify({
    task_id: "plan_1_task_1",
    plan_id: "plan_1",
    session_id: "s",
    user_id: "u",
    thread_id: "t",
    message,
    inputs: { message, ...inputs },
    context: { dependencies },
  });
}

async function post(text: string): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: text,
  });
}

/** [event, data] pairs of an SSE body. */
function events(text: string): [string, any][] {
  return text
    .split("\n\n")
    .map((block) => block.split("\n").filter((l) => l && !l.startsWith(":")))
    .filter((lines) => lines.length > 0)
    .map((lines) => {
      const name = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message";
      const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      return [name, JSON.parse(data)];
    });
}

test("deltas, then one result", async () => {
  const resp = await post(body({ city: "Sanya", nights: 2 }));
  assert.equal(resp.status, 200);
  assert.match(resp.headers.get("content-type") ?? "", /^text\/event-stream/);
  const evs = events(await resp.text());
  assert.deepEqual(evs.map(([name]) => name), ["delta", "delta", "result"]);
  const result = evs[2][1];
  assert.equal(result.output.nights, 2);
  assert.ok(result.output.items.includes("sunscreen"));
  assert.ok(result.message.startsWith("去Sanya住 2 晚"));
});

test("nights from a dependency, else 3", async () => {
  const withDep = events(await (await post(body({ city: "北京" }, { plan_1_task_0: { nights: 4 } }))).text());
  assert.equal(withDep[2][1].output.nights, 4);
  const plain = events(await (await post(body({ city: "北京" }))).text());
  assert.equal(plain[2][1].output.nights, 3);
});

test("bad requests get a 4xx, not a stream", async () => {
  assert.equal((await post('{"task_id": ')).status, 400);
  assert.equal((await post(body({ nights: 2 }))).status, 422);
  assert.equal((await post(body({ city: "北京", nights: 99 }))).status, 422);
});
