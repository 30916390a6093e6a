// The chat view: one AG-UI HttpAgent per conversation (POST /v1/ag-ui), each run rendered as a
// turn: the user's text, a collapsible thinking track (steps and their reasoning messages), the
// plan's progress (the PLAN activity message), one card per sub-agent run with its live text, the
// answer, and either a form for the run's interrupts or an escalation card.
import { HttpAgent, buildResumeArray, randomUUID, type AgentSubscriber } from "@ag-ui/client";
import { current, el, setLang, t, translate } from "./i18n";
import { interruptForm, type Interrupt } from "./widgets";

/** The anonymous token the server issued (x-anonymous-token), sent back so resumes are ours. */
let anonToken = sessionStorage.getItem("switchboard.token") ?? "";

const fetchWithToken: typeof fetch = async (url, init) => {
  const headers = new Headers(init?.headers);
  if (anonToken) headers.set("x-anonymous-token", anonToken);
  const res = await fetch(url, { ...init, headers });
  const issued = res.headers.get("x-anonymous-token");
  if (issued) {
    anonToken = issued;
    sessionStorage.setItem("switchboard.token", issued);
  }
  return res;
};

const log = document.querySelector<HTMLElement>("#log")!;
const composer = document.querySelector<HTMLFormElement>("#composer")!;
const input = document.querySelector<HTMLTextAreaElement>("#query")!;
const memory = document.querySelector<HTMLElement>("#memory")!;
let agentNames = new Map<string, string>();
let agent = newAgent();
let busy = false;

function newAgent(): HttpAgent {
  return new HttpAgent({ url: "/v1/ag-ui", threadId: `web-${randomUUID()}`, fetch: fetchWithToken });
}

/** The DOM of one run. */
class Turn {
  root = el("article", "turn");
  thinking = el("details", "thinking");
  steps = el("ol", "steps");
  plan = el("section", "plan");
  planList = el("ol");
  agents = el("div", "subagents");
  cards = new Map<string, HTMLElement>();
  answer: HTMLElement | null = null;
  step: HTMLElement | null = null;

  constructor(userText: string | null) {
    if (userText) {
      const u = el("div", "bubble user", userText);
      u.setAttribute("aria-label", t("you"));
      this.root.append(u);
    }
    const summary = el("summary", "", t("thinking"));
    this.thinking.append(summary, this.steps);
    this.plan.setAttribute("aria-label", t("plan"));
    this.plan.append(el("h3", "", t("plan")), this.planList);
    this.plan.hidden = true;
    this.root.append(this.thinking, this.plan, this.agents);
    log.append(this.root);
  }

  card(id: string, title: string, agentId = ""): HTMLElement {
    let card = this.cards.get(id);
    if (!card) {
      card = el("section", "card subagent");
      card.dataset.run = id;
      const header = el("header");
      const name = el("strong", "", title);
      const who = el("span", "agent", agentNames.get(agentId) ?? agentId);
      const badge = el("span", "badge running", t("status_running"));
      header.append(name, who, badge);
      card.append(header, el("p", "text"));
      card.setAttribute("aria-label", title);
      this.agents.append(card);
      this.cards.set(id, card);
    }
    return card;
  }

  status(id: string, status: string): void {
    const badge = this.cards.get(id)?.querySelector(".badge");
    if (badge) {
      badge.className = `badge ${status}`;
      badge.textContent = t(`status_${status}`);
    }
  }

  renderPlan(content: any): void {
    const tasks: any[] = content?.sub_tasks ?? [];
    this.plan.hidden = tasks.length === 0;
    this.planList.replaceChildren(
      ...tasks.map((task) => {
        const li = el("li", `task ${task.status}`);
        li.dataset.task = task.task_id;
        li.append(el("span", "desc", task.description), el("span", `badge ${task.status}`, t(`status_${task.status}`)));
        if (task.reason && (task.status === "failed" || task.status === "skipped")) li.append(el("small", "reason", task.reason));
        return li;
      }),
    );
  }
}

function subscriber(turn: Turn): AgentSubscriber {
  // This run's plan activity (a resumed run keeps the plan's id, so it is told by its snapshot).
  let planId = "";
  return {
    onActivitySnapshotEvent: ({ event }) => {
      if (event.activityType === "PLAN") planId = event.messageId;
    },
    onStepStartedEvent: ({ event }) => {
      turn.step = el("li", "step");
      turn.step.append(el("strong", "", t(`step_${event.stepName}`)), el("ul"));
      turn.steps.append(turn.step);
    },
    onReasoningMessageContentEvent: ({ event }) => {
      turn.step?.querySelector("ul")?.append(el("li", "", event.delta));
    },
    onSubagentStartedEvent: ({ event }) => {
      turn.card(event.subagentRunId, event.description ?? event.name, event.name);
    },
    onSubagentFinishedEvent: ({ event }) => turn.status(event.subagentRunId, event.outcome?.type === "suspended" ? "suspended" : "done"),
    onSubagentErrorEvent: ({ event }) => turn.status(event.subagentRunId, "failed"),
    onTextMessageStartEvent: ({ event }) => {
      if (event.messageId.startsWith("answer_")) {
        turn.answer = el("div", "bubble answer");
        turn.answer.setAttribute("aria-label", t("answer"));
        turn.answer.setAttribute("aria-live", "polite");
        turn.root.append(turn.answer);
      } else if (!turn.cards.has(event.messageId)) {
        // A sub-task that was never dispatched (skipped): its message only.
        turn.card(event.messageId, "").querySelector(".badge")?.remove();
      }
    },
    onTextMessageContentEvent: ({ event }) => {
      const target = event.messageId.startsWith("answer_") ? turn.answer : turn.cards.get(event.messageId)?.querySelector(".text");
      if (target) target.textContent += event.delta;
    },
    onMessagesChanged: ({ messages }) => {
      const plan = planId && messages.find((m: any) => m.role === "activity" && m.id === planId);
      if (plan) turn.renderPlan((plan as any).content);
    },
    onStateChanged: ({ state }) => renderMemory(state),
    onRunFinishedEvent: (params) => {
      turn.thinking.querySelector("summary")!.textContent = `${t("thinking")} (${turn.steps.children.length})`;
      if (params.outcome === "interrupt") turn.root.append(form(params.interrupts as Interrupt[]));
      const result = params.outcome === "success" ? (params.result as any) : undefined;
      if (result?.escalation) turn.root.append(escalationCard(result.escalation));
    },
    onRunErrorEvent: ({ event }) => {
      turn.root.append(el("p", "error", t("error", { message: event.message })));
    },
  };
}

function renderMemory(state: any): void {
  const slots = state?.conversation?.slots ?? {};
  const entries = Object.entries(slots);
  memory.hidden = entries.length === 0;
  memory.replaceChildren(el("strong", "", `${t("remembered")}: `), ...entries.map(([k, v]) => el("span", "slot", `${k}=${v}`)));
}

function form(interrupts: Interrupt[]): HTMLFormElement {
  return interruptForm(interrupts, {
    submit: (payloads) => {
      const responses = Object.fromEntries(interrupts.map((i) => [i.id, { status: "resolved" as const, payload: payloads[i.id] ?? {} }]));
      void runTurn(null, buildResumeArray(agent.pendingInterrupts, responses));
    },
    cancel: () => {
      const responses = Object.fromEntries(interrupts.map((i) => [i.id, { status: "cancelled" as const }]));
      void runTurn(null, buildResumeArray(agent.pendingInterrupts, responses));
    },
  });
}

function escalationCard(card: any): HTMLElement {
  const box = el("section", "card escalation");
  box.setAttribute("role", "status");
  box.append(el("h3", "", t("escalated")));
  const dl = el("dl");
  const turns = Array.isArray(card.last_turns) ? card.last_turns.length : 0;
  const rows: [string, string][] = [
    [t("escalationReason"), t(`reason_${card.reason}`) === `reason_${card.reason}` ? String(card.reason) : t(`reason_${card.reason}`)],
    [t("escalationSummary"), card.summary ?? ""],
    [t("escalationSeen"), t("escalationTurns", { n: turns })],
  ];
  if (card.pending?.length) rows.push([t("escalationPending"), card.pending.map((p: any) => p.description).join("；")]);
  for (const [k, v] of rows) dl.append(el("dt", "", k), el("dd", "", v));
  box.append(dl);
  return box;
}

async function runTurn(text: string | null, resume?: ReturnType<typeof buildResumeArray>): Promise<void> {
  if (busy) return;
  busy = true;
  composer.querySelector("button")!.disabled = true;
  const turn = new Turn(text);
  if (text) agent.addMessage({ id: randomUUID(), role: "user", content: text });
  try {
    await agent.runAgent({ runId: randomUUID(), ...(resume ? { resume } : {}) }, subscriber(turn));
  } catch (e) {
    turn.root.append(el("p", "error", t("error", { message: String((e as Error).message ?? e) })));
  } finally {
    busy = false;
    composer.querySelector("button")!.disabled = false;
    turn.root.scrollIntoView({ block: "end" });
  }
}

composer.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  void runTurn(text);
});
input.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) {
    ev.preventDefault();
    composer.requestSubmit();
  }
});
document.querySelector("#new")!.addEventListener("click", () => {
  agent = newAgent();
  log.replaceChildren();
  renderMemory({});
});
document.querySelector("#lang")!.addEventListener("click", () => {
  setLang(current() === "zh" ? "en" : "zh");
  translate();
});

translate();
fetch("/v1/agents")
  .then((r) => r.json())
  .then((body) => (agentNames = new Map(body.agents.map((a: any) => [a.id, a.name]))))
  .catch(() => {});
