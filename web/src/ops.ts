// The ops page: capability cards (availability, circuit), the config (version, hash, loaded at,
// last reload error), a reload button (the admin token is typed in and never stored), and live
// counters from /metrics, refreshed every few seconds.
import { current, el, setLang, t, translate } from "./i18n";

const cards = document.querySelector<HTMLElement>("#cards")!;
const config = document.querySelector<HTMLElement>("#config")!;
const counters = document.querySelector<HTMLTableSectionElement>("#counters tbody")!;
const reloadForm = document.querySelector<HTMLFormElement>("#reload")!;
const token = document.querySelector<HTMLInputElement>("#token")!;
const reloadResult = document.querySelector<HTMLElement>("#reload-result")!;

async function loadAgents(): Promise<void> {
  const body = await (await fetch("/v1/agents")).json();
  cards.replaceChildren(
    ...body.agents.map((a: any) => {
      const card = el("section", "card agent-card");
      card.dataset.agent = a.id;
      card.setAttribute("aria-label", a.name);
      const header = el("header");
      header.append(el("strong", "", a.name), el("code", "", a.id));
      const state = el("p", "states");
      state.append(
        el("span", `badge ${a.available ? "done" : "failed"}`, a.available ? t("available") : t("unavailable")),
        el("span", `badge circuit-${a.circuit}`, `${t("circuit")}: ${t(`circuit_${a.circuit}`)}`),
      );
      card.append(header, el("p", "desc", a.description), state);
      if (a.unavailable_reason) card.append(el("p", "error", a.unavailable_reason));
      card.append(el("p", "endpoint", `${a.endpoint.protocol} ${a.endpoint.url}`));
      return card;
    }),
  );
}

async function loadConfig(): Promise<void> {
  const c = await (await fetch("/v1/config")).json();
  const rows: [string, string][] = [
    [t("version"), String(c.version)],
    [t("hash"), String(c.hash).slice(0, 16)],
    [t("loadedAt"), new Date(c.loaded_at).toLocaleString()],
    [t("reloads"), `${c.reloads_ok} / ${c.reloads_failed}`],
    [t("lastError"), c.last_error ? JSON.stringify(c.last_error) : t("none")],
  ];
  config.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", "", k), el("dd", "", v)]));
}

/** Counters and gauges of /metrics (histogram buckets left out). */
async function loadMetrics(): Promise<void> {
  const text = await (await fetch("/metrics")).text();
  const lines = text.split("\n").filter((l) => l && !l.startsWith("#") && !l.includes("_bucket"));
  counters.replaceChildren(
    ...lines.map((line) => {
      const at = line.lastIndexOf(" ");
      const tr = el("tr");
      tr.append(el("td", "", line.slice(0, at)), el("td", "num", line.slice(at + 1)));
      return tr;
    }),
  );
}

reloadForm.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const secret = token.value;
  token.value = "";
  const res = await fetch("/v1/admin/reload", { method: "POST", headers: { authorization: `Bearer ${secret}` } });
  const body = await res.json().catch(() => ({}));
  const ok = res.ok && body.outcome !== "rejected";
  reloadResult.textContent = ok
    ? t("reloadOk", { version: body.version ?? "", outcome: body.outcome ?? "" })
    : t("reloadFailed", { message: body.error?.message ?? JSON.stringify(body.errors ?? res.status) });
  reloadResult.className = ok ? "ok" : "error";
  await refresh();
});

document.querySelector("#lang")!.addEventListener("click", () => {
  setLang(current() === "zh" ? "en" : "zh");
  translate();
  void refresh();
});

async function refresh(): Promise<void> {
  await Promise.all([loadAgents(), loadConfig(), loadMetrics()]).catch(() => {});
}

translate();
void refresh();
setInterval(() => void loadMetrics().catch(() => {}), 5000);
