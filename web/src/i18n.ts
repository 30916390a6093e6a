// UI texts in Chinese and English. The language is the one chosen last (kept in localStorage),
// else the browser's; `t(key)` looks a text up, `{name}` placeholders are filled from `vars`.

export type Lang = "zh" | "en";

const texts = {
  zh: {
    title: "Switchboard 助手",
    opsTitle: "Switchboard 运维",
    toOps: "运维",
    toChat: "对话",
    newChat: "新对话",
    language: "English",
    languageLabel: "切换到英文",
    inputLabel: "输入您的需求",
    placeholder: "例如：帮我查一下航班CA1234，然后安排白云机场接机",
    send: "发送",
    you: "您",
    thinking: "思考过程",
    plan: "任务进度",
    answer: "回答",
    step_intent: "理解需求",
    step_plan: "规划任务",
    step_execute: "执行",
    step_summarize: "整理结果",
    status_pending: "等待中",
    status_running: "进行中",
    status_done: "已完成",
    status_failed: "失败",
    status_skipped: "已跳过",
    status_blocked: "待补充",
    status_cancelled: "已取消",
    status_suspended: "等待您的回答",
    needInput: "还需要一些信息",
    submit: "提交",
    cancel: "取消",
    expires: "请在 {time} 前填写",
    expired: "已过期：请重新发起请求",
    choose: "请选择",
    intentPicker: "您想办哪一件事？",
    answerField: "您的回答",
    escalated: "已转人工",
    escalationReason: "原因",
    escalationSummary: "摘要",
    escalationSeen: "客服将看到",
    escalationTurns: "最近 {n} 轮对话",
    escalationPending: "未完成的任务",
    reason_user_requested: "您要求人工服务",
    reason_sensitive: "涉及敏感内容",
    reason_self_harm: "需要紧急关怀",
    reason_abusive: "对话需要人工处理",
    reason_clarification_rounds_exhausted: "多次补充信息仍未完成",
    reason_repeated_failures: "多次处理失败",
    error: "出错了：{message}",
    remembered: "已记住",
    agents: "能力卡片",
    available: "可用",
    unavailable: "不可用",
    circuit: "熔断状态",
    circuit_closed: "正常",
    circuit_half_open: "半开",
    circuit_open: "熔断",
    config: "配置",
    version: "版本",
    hash: "哈希",
    loadedAt: "加载时间",
    lastError: "最近一次重载错误",
    none: "无",
    reloads: "重载次数（成功/失败）",
    reload: "重新加载配置",
    adminToken: "管理员令牌",
    reloadOk: "重新加载完成（{outcome}）：版本 {version}",
    reloadFailed: "重新加载失败：{message}",
    counters: "实时计数",
    metric: "指标",
    value: "值",
  },
  en: {
    title: "Switchboard assistant",
    opsTitle: "Switchboard operations",
    toOps: "Operations",
    toChat: "Chat",
    newChat: "New conversation",
    language: "中文",
    languageLabel: "Switch to Chinese",
    inputLabel: "What do you need?",
    placeholder: "e.g. check flight CA1234 and arrange an airport pickup",
    send: "Send",
    you: "You",
    thinking: "Thinking",
    plan: "Progress",
    answer: "Answer",
    step_intent: "Understanding",
    step_plan: "Planning",
    step_execute: "Working",
    step_summarize: "Summarizing",
    status_pending: "waiting",
    status_running: "running",
    status_done: "done",
    status_failed: "failed",
    status_skipped: "skipped",
    status_blocked: "needs input",
    status_cancelled: "cancelled",
    status_suspended: "waiting for your answer",
    needInput: "A few more details",
    submit: "Submit",
    cancel: "Cancel",
    expires: "Please answer before {time}",
    expired: "Expired: please ask again",
    choose: "Choose…",
    intentPicker: "Which one did you mean?",
    answerField: "Your answer",
    escalated: "Handed over to a human",
    escalationReason: "Reason",
    escalationSummary: "Summary",
    escalationSeen: "The agent will see",
    escalationTurns: "the last {n} turns",
    escalationPending: "Unfinished tasks",
    reason_user_requested: "you asked for a person",
    reason_sensitive: "sensitive content",
    reason_self_harm: "urgent care needed",
    reason_abusive: "the conversation needs a person",
    reason_clarification_rounds_exhausted: "details still missing after several asks",
    reason_repeated_failures: "repeated failures",
    error: "Something went wrong: {message}",
    remembered: "Remembered",
    agents: "Capability cards",
    available: "available",
    unavailable: "unavailable",
    circuit: "Circuit",
    circuit_closed: "closed",
    circuit_half_open: "half-open",
    circuit_open: "open",
    config: "Configuration",
    version: "Version",
    hash: "Hash",
    loadedAt: "Loaded at",
    lastError: "Last reload error",
    none: "none",
    reloads: "Reloads (ok / failed)",
    reload: "Reload configuration",
    adminToken: "Admin token",
    reloadOk: "Reload done ({outcome}): version {version}",
    reloadFailed: "Reload failed: {message}",
    counters: "Live counters",
    metric: "Metric",
    value: "Value",
  },
} as const;

export type Key = keyof (typeof texts)["zh"];

const stored = typeof localStorage !== "undefined" ? localStorage.getItem("switchboard.lang") : null;
let lang: Lang = stored === "en" || stored === "zh" ? stored : navigator.language.startsWith("zh") ? "zh" : "en";

export function current(): Lang {
  return lang;
}

export function setLang(next: Lang): void {
  lang = next;
  localStorage.setItem("switchboard.lang", next);
  document.documentElement.lang = next === "zh" ? "zh-CN" : "en";
}

export function t(key: Key | string, vars: Record<string, string | number> = {}): string {
  const table = texts[lang] as Record<string, string>;
  const text = table[key] ?? (texts.en as Record<string, string>)[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name: string) => String(vars[name] ?? ""));
}

/** Fills every `[data-t]` element's text (and `data-t-placeholder`, `data-t-label`). */
export function translate(root: ParentNode = document): void {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  root.querySelectorAll<HTMLElement>("[data-t]").forEach((el) => (el.textContent = t(el.dataset.t!)));
  root.querySelectorAll<HTMLElement>("[data-t-placeholder]").forEach((el) => el.setAttribute("placeholder", t(el.dataset.tPlaceholder!)));
  root.querySelectorAll<HTMLElement>("[data-t-label]").forEach((el) => el.setAttribute("aria-label", t(el.dataset.tLabel!)));
}

/** `<tag class>` with text. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls = "", text = ""): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text) e.textContent = text;
  return e;
}
