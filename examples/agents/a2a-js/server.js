// packing_agent: a Switchboard sub-agent speaking A2A 1.0 over JSON-RPC, on the official
// @a2a-js/sdk server (docs/sub-agent-protocol.md, section `a2a`).
//
// The supervisor reads the Agent Card at /.well-known/agent-card.json, then calls
// SendStreamingMessage (the card says `streaming: true`) on the card's JSONRPC interface with
// header `A2A-Version: 1.0`. The message carries the user's request as a text part and the
// sub-task's inputs (semantic keys, without `message`) as one data part. What it makes of the
// reply: status-message and artifact texts are relayed to the user as they arrive; data parts of
// artifacts become the sub-task's `output` (checked against the card's output schema);
// TASK_STATE_COMPLETED is done, INPUT_REQUIRED asks the user (the answer continues this task).
// The SDK answers an unsupported `A2A-Version` with -32009 and malformed JSON with -32700.
//
//   PORT=9204 node server.js

import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";

import express from "express";
import { AGENT_CARD_PATH, Role, TaskState } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";

import { isChinese, packingList, replyText } from "./packing.js";

/** Pause between progress events (a real agent is doing work here). */
const STEP_MS = 50;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const textPart = (text) => ({ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" });
const dataPart = (data) => ({ content: { $case: "data", value: data }, metadata: undefined, filename: "", mediaType: "application/json" });

function agentMessage(taskId, contextId, text) {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    taskId,
    contextId,
    extensions: [],
    metadata: {},
    referenceTaskIds: [],
  };
}

/** The user's text and the sub-task's inputs (the data part) of a message. */
function readMessage(message) {
  let text = "";
  const inputs = {};
  for (const part of message.parts ?? []) {
    if (part.content?.$case === "text") text += part.content.value;
    if (part.content?.$case === "data" && part.content.value && typeof part.content.value === "object") {
      Object.assign(inputs, part.content.value);
    }
  }
  return { text, inputs };
}

/** The agent's logic as an A2A executor: one task per message. */
class PackingExecutor {
  async execute(requestContext, eventBus) {
    const { taskId, contextId, userMessage } = requestContext;
    const status = (state, text) => ({
      state,
      message: text === undefined ? undefined : agentMessage(taskId, contextId, text),
      timestamp: new Date().toISOString(),
    });
    const update = (state, text) =>
      eventBus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(state, text), metadata: undefined }));

    // The first event of every execution is the task (a follow-up carries the existing one).
    const task = requestContext.task ?? {
      id: taskId,
      contextId,
      status: status(TaskState.TASK_STATE_SUBMITTED),
      artifacts: [],
      history: [userMessage],
      metadata: undefined,
    };
    eventBus.publish(AgentEvent.task(task));

    // A continued task (after INPUT_REQUIRED) adds the user's answer as text.
    const { text, inputs } = readMessage(userMessage);
    const chinese = isChinese(text);
    const city = typeof inputs.city === "string" && inputs.city ? inputs.city : (requestContext.task ? text.trim() : "");
    if (!city) {
      // Not a failure: the supervisor shows the question and sends the user's answer on this task.
      update(TaskState.TASK_STATE_INPUT_REQUIRED, chinese ? "去哪个城市？" : "Which city are you going to?");
      eventBus.finished();
      return;
    }
    const nights = Number.isInteger(inputs.nights) && inputs.nights >= 1 && inputs.nights <= 30 ? inputs.nights : 3;

    update(TaskState.TASK_STATE_WORKING, chinese ? `正在查看${city}的天气…` : `Checking the weather in ${city}…`);
    await sleep(STEP_MS);
    const items = packingList(city, nights);
    eventBus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: randomUUID(),
          name: "packing_list",
          description: "The packing list",
          // The data part becomes the sub-task's `output` (checked against the card's output schema).
          parts: [dataPart({ city, nights, items })],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    // The last status message is the text the user reads.
    update(TaskState.TASK_STATE_COMPLETED, replyText(city, nights, items, chinese));
    eventBus.finished();
  }

  cancelTask = async (taskId, eventBus) => {
    eventBus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: "",
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    eventBus.finished();
  };
}

/** The Agent Card: what the supervisor reads before calling. */
export function agentCard(baseUrl) {
  return {
    name: "Packing Agent",
    description: "Lists what to pack for a trip to a city, by number of nights.",
    supportedInterfaces: [{ url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
    provider: { organization: "Switchboard examples", url: "https://example.com" },
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain", "application/json"],
    skills: [
      {
        id: "packing_list",
        name: "Packing list",
        description: "What to pack for N nights in a city.",
        tags: ["packing", "travel"],
        examples: ["What should I pack for 3 nights in Shanghai?", "去北京住三晚要带什么"],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

/** The Express app: the Agent Card and the JSON-RPC endpoint. */
export function agentApp(baseUrl) {
  const handler = new DefaultRequestHandler(agentCard(baseUrl), new InMemoryTaskStore(), new PackingExecutor());
  const app = express();
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.get("/healthz", (_req, res) => res.json({ status: "ok" }));
  return app;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const port = Number(process.env.PORT ?? 9204);
  const host = process.env.HOST ?? "127.0.0.1";
  const base = process.env.PUBLIC_URL ?? `http://${host}:${port}`;
  agentApp(base).listen(port, host, () => console.log(`packing_agent (a2a) listening on ${base}`));
}
