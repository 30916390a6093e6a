// Forms for AG-UI interrupts: each key of an interrupt's `responseSchema` is one control, chosen
// by the widget the server names for it (`metadata.widgets[].descriptor.component`, from
// widgets_map.json) and typed by the schema (enum, format, number). Unknown components are text
// inputs. `intent_picker` (or `candidates` on the widget) is a choice among agents.
import { el, t } from "./i18n";

export interface Interrupt {
  id: string;
  reason: string;
  message?: string;
  responseSchema?: Record<string, any>;
  expiresAt?: string;
  metadata?: Record<string, any>;
}

interface Widget {
  key: string;
  description?: string;
  widget?: string;
  descriptor?: { component?: string; label?: string; props?: Record<string, any> } | null;
  candidates?: Candidate[];
}

interface Candidate {
  agent_id: string;
  name?: string;
  description?: string;
}

let fieldSeq = 0;

function today(): string {
  const d = new Date();
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

function select(options: { value: string; label: string }[]): HTMLSelectElement {
  const s = el("select");
  const blank = el("option", "", t("choose"));
  blank.value = "";
  s.append(blank, ...options.map((o) => Object.assign(el("option", "", o.label), { value: o.value })));
  return s;
}

/** The control for one key. */
function control(w: Widget, prop: Record<string, any>): HTMLInputElement | HTMLSelectElement {
  const component = w.descriptor?.component ?? "";
  const props = w.descriptor?.props ?? {};
  const candidates = w.candidates ?? (w.widget === "intent_picker" ? props.candidates : undefined);
  if (Array.isArray(candidates)) {
    return select(
      candidates.map((c: Candidate) => ({
        value: c.agent_id,
        label: c.description ? `${c.name ?? c.agent_id} — ${c.description}` : (c.name ?? c.agent_id),
      })),
    );
  }
  const options: string[] | undefined = Array.isArray(prop.enum) ? prop.enum : props.options;
  if (["CityPicker", "AirportPicker", "Select"].includes(component) || Array.isArray(prop.enum)) {
    if (options) return select(options.map((o) => ({ value: String(o), label: String(o) })));
  }
  const input = el("input");
  input.type = "text";
  if (component === "DatePicker" || prop.format === "date") {
    input.type = "date";
    if (props.disablePast) input.min = today();
  } else if (component === "DateTimePicker" || prop.format === "date-time") {
    input.type = "datetime-local";
  } else if (component === "NumberInput" || prop.type === "number" || prop.type === "integer") {
    input.type = "number";
    if (props.min !== undefined) input.min = String(props.min);
    if (prop.minimum !== undefined) input.min = String(prop.minimum);
    input.step = String(props.step ?? (prop.type === "integer" ? 1 : "any"));
  } else {
    if (props.pattern) input.pattern = props.pattern;
    else if (prop.pattern) input.pattern = prop.pattern;
    if (props.placeholder) input.placeholder = props.placeholder;
  }
  return input;
}

/** The value of a control, typed by its schema property. */
function value(c: HTMLInputElement | HTMLSelectElement, prop: Record<string, any>): unknown {
  const v = c.value.trim();
  if (prop.type === "number") return Number(v);
  if (prop.type === "integer") return Math.trunc(Number(v));
  return v;
}

export interface FormHandlers {
  submit(payloads: Record<string, Record<string, unknown>>): void;
  cancel(): void;
}

/** One form for every interrupt of a run: submit resolves them all, cancel cancels them all. */
export function interruptForm(interrupts: Interrupt[], h: FormHandlers): HTMLFormElement {
  const form = el("form", "card interrupt");
  form.setAttribute("aria-label", t("needInput"));
  form.append(el("h3", "", t("needInput")));
  const readers: (() => [string, string, unknown])[] = [];
  let expired = false;
  for (const it of interrupts) {
    const fieldset = el("fieldset");
    const legend = it.message?.split("\n")[0];
    if (legend) fieldset.append(el("legend", "", legend));
    const schema = it.responseSchema ?? {};
    const widgets: Widget[] = Array.isArray(it.metadata?.widgets) ? it.metadata!.widgets : [];
    const keys: string[] = Array.from(new Set([...(schema.required ?? []), ...Object.keys(schema.properties ?? {}), ...widgets.map((w) => w.key)]));
    for (const key of keys) {
      const prop = schema.properties?.[key] ?? {};
      const w: Widget = widgets.find((x) => x.key === key) ?? { key };
      if (!w.candidates && Array.isArray(it.metadata?.candidates) && w.widget === "intent_picker") w.candidates = it.metadata!.candidates;
      const c = control(w, prop);
      const id = `field-${++fieldSeq}`;
      c.id = id;
      c.name = key;
      c.dataset.key = key;
      c.required = (schema.required ?? []).includes(key);
      // A value to confirm (or any schema default) is filled in: submitting confirms it.
      if (prop.default !== undefined && prop.default !== null) c.value = String(prop.default);
      const text = w.description ?? prop.description ?? (key === "answer" ? t("answerField") : key);
      // A field described by the very question the legend asks (a did-you-mean about a part of a
      // planned request) is not labelled twice: its label is only read by screen readers.
      const label = el("label", text === legend ? "sr-only" : "", text);
      label.htmlFor = id;
      const row = el("div", text === legend ? "field solo" : "field");
      row.append(label, c);
      fieldset.append(row);
      readers.push(() => [it.id, key, value(c, prop)]);
    }
    if (it.expiresAt) {
      const at = new Date(it.expiresAt);
      expired ||= at.getTime() <= Date.now();
      const time = at.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
      fieldset.append(el("p", "expiry", expired ? t("expired") : t("expires", { time })));
    }
    form.append(fieldset);
  }
  const buttons = el("div", "buttons");
  const submit = el("button", "primary", t("submit"));
  submit.type = "submit";
  const cancel = el("button", "", t("cancel"));
  cancel.type = "button";
  buttons.append(submit, cancel);
  form.append(buttons);
  const done = () => form.querySelectorAll("input, select, button").forEach((x) => ((x as HTMLInputElement).disabled = true));
  if (expired) submit.disabled = true;
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const payloads: Record<string, Record<string, unknown>> = {};
    for (const read of readers) {
      const [id, key, v] = read();
      (payloads[id] ??= {})[key] = v;
    }
    done();
    h.submit(payloads);
  });
  cancel.addEventListener("click", () => {
    done();
    h.cancel();
  });
  return form;
}
