// The web frontend in a real browser: headless Chromium from Debian's packages (CHROMIUM
// overrides /usr/bin/chromium) driven by playwright-core, against `switchboard demo`.
// Screenshots go to ci-artifacts/web/ at the repo root.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { ADMIN_TOKEN, startDemo } from "./demo.mjs";

const shots = resolve(dirname(fileURLToPath(import.meta.url)), "../../ci-artifacts/web");
mkdirSync(shots, { recursive: true });
const TIMEOUT = 30_000;

let demo;
let browser;
before(async () => {
  demo = await startDemo();
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
});
after(async () => {
  await browser?.close();
  await demo?.stop();
});

/** A fresh page on the chat (Chinese unless `locale` says otherwise); page errors fail the test. */
async function chat(locale = "zh-CN") {
  const context = await browser.newContext({ locale, viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(`${demo.base}/`);
  page.errors = errors;
  return page;
}

async function ask(page, text) {
  await page.getByLabel("输入您的需求").fill(text);
  await page.getByRole("button", { name: "发送" }).click();
}

/** The last turn's answer once its run finished. */
async function answer(page) {
  const turn = page.locator("article.turn").last();
  await turn.locator(".thinking summary", { hasText: "(" }).waitFor();
  return turn;
}

test("the flight + airport-pickup DAG shows both sub-agent cards and the answer", async () => {
  const page = await chat();
  await ask(page, "帮我查一下航班CA1234，然后安排白云机场接机");
  const turn = await answer(page);
  const cards = turn.locator("section.subagent");
  assert.equal(await cards.count(), 2);
  assert.match(await cards.nth(0).innerText(), /CA1234/);
  assert.match(await cards.nth(1).innerText(), /司机/);
  assert.equal(await turn.locator("section.subagent .badge.done").count(), 2);
  assert.equal(await turn.locator(".plan li.done").count(), 2, "the plan shows both done");
  assert.match(await turn.locator(".bubble.answer").innerText(), /已为您完成/);
  await turn.locator(".thinking summary").click();
  assert.match(await turn.locator(".steps").innerText(), /正在理解您的需求/);
  await page.screenshot({ path: join(shots, "dag.png"), fullPage: true });
  assert.deepEqual(page.errors, []);
});

test("帮我订个酒店 shows city and date widgets; submitting them completes the booking", async () => {
  const page = await chat();
  await ask(page, "帮我订个酒店");
  const turn = await answer(page);
  const form = turn.locator("form.interrupt");
  const city = form.getByLabel("入住城市");
  const date = form.getByLabel("入住日期");
  assert.equal(await city.evaluate((e) => e.tagName), "SELECT", "CityPicker is a choice");
  assert.equal(await date.getAttribute("type"), "date", "DatePicker is a date input");
  assert.match(await form.locator(".expiry").innerText(), /前填写/);
  await city.selectOption("北京");
  await date.fill(new Date(Date.now() + 7 * 86400e3).toISOString().slice(0, 10));
  await page.screenshot({ path: join(shots, "hotel-form.png"), fullPage: true });
  await form.getByRole("button", { name: "提交" }).click();
  const booked = await answer(page);
  await booked.locator("section.subagent .badge.done").waitFor();
  assert.match(await booked.locator(".bubble.answer").innerText(), /已为您完成/);
  assert.equal(await booked.locator(".plan li.done").count(), 1, "the resumed plan's progress");
  assert.match(await page.locator("#memory").innerText(), /city=北京/);
  await page.screenshot({ path: join(shots, "hotel-booked.png"), fullPage: true });
  assert.deepEqual(page.errors, []);
});

test("a second booking confirms the remembered city and date in a filled-in form", async () => {
  const page = await chat();
  const day = new Date(Date.now() + 7 * 86400e3).toISOString().slice(0, 10);
  await ask(page, `帮我订北京的酒店，${day}入住`);
  await (await answer(page)).locator("section.subagent .badge.done").waitFor();
  await ask(page, "再帮我订个酒店");
  const turn = await answer(page);
  assert.match(await turn.locator(".bubble.answer").innerText(), /请确认/);
  const form = turn.locator("form.interrupt");
  assert.equal(await form.getByLabel("入住城市").inputValue(), "北京", "the remembered city is filled in");
  assert.equal(await form.getByLabel("入住日期").inputValue(), day);
  assert.equal(await turn.locator("section.subagent").count(), 0, "nothing ran before the confirmation");
  await page.screenshot({ path: join(shots, "confirm.png"), fullPage: true });
  await form.getByRole("button", { name: "提交" }).click();
  const booked = await answer(page);
  await booked.locator("section.subagent .badge.done").waitFor();
  assert.match(await booked.locator(".bubble.answer").innerText(), /已为您完成/);
  assert.deepEqual(page.errors, []);
});

test("cancel drops the pending booking", async () => {
  const page = await chat();
  await ask(page, "帮我订个酒店");
  const turn = await answer(page);
  await turn.locator("form.interrupt").getByRole("button", { name: "取消" }).click();
  const cancelled = await answer(page);
  assert.match(await cancelled.locator(".bubble.answer").innerText(), /取消/);
  assert.equal(await cancelled.locator("section.subagent").count(), 0, "nothing ran");
  assert.equal(await cancelled.locator("form.interrupt").count(), 0);
  await page.screenshot({ path: join(shots, "cancel.png"), fullPage: true });
  assert.deepEqual(page.errors, []);
});

test("a did-you-mean question is a choice among the candidates; picking one runs it", async () => {
  const page = await chat();
  await ask(page, "我明天要去上海");
  const turn = await answer(page);
  const picker = turn.locator("form.interrupt select");
  const options = await picker.locator("option").evaluateAll((os) => os.map((o) => o.value).filter(Boolean));
  assert.ok(options.includes("weather_agent"), `${options}`);
  await picker.selectOption("weather_agent");
  await page.screenshot({ path: join(shots, "intent-picker.png"), fullPage: true });
  await turn.locator("form.interrupt").getByRole("button", { name: "提交" }).click();
  const picked = await answer(page);
  await picked.locator("section.subagent .badge.done").waitFor();
  assert.match(await picked.locator(".bubble.answer").innerText(), /上海/);
  assert.deepEqual(page.errors, []);
});

test("an English browser gets the English UI, and the button switches to Chinese", async () => {
  const page = await chat("en-US");
  await page.getByLabel("What do you need?").fill("book a hotel");
  await page.getByRole("button", { name: "Send" }).click();
  const turn = await answer(page);
  const form = turn.locator("form.interrupt");
  assert.match(await form.innerText(), /A few more details/);
  assert.equal(await form.getByRole("button", { name: "Submit" }).count(), 1);
  await page.screenshot({ path: join(shots, "english.png"), fullPage: true });
  await page.getByRole("button", { name: "Switch to Chinese" }).click();
  assert.equal(await page.getByRole("button", { name: "发送" }).count(), 1);
  assert.deepEqual(page.errors, []);
});

test("an escalation shows the escalation card", async () => {
  const page = await chat();
  await ask(page, "我要转人工");
  const turn = await answer(page);
  const card = turn.locator("section.escalation");
  assert.match(await card.innerText(), /已转人工/);
  assert.match(await card.innerText(), /您要求人工服务/);
  await page.screenshot({ path: join(shots, "escalation.png"), fullPage: true });
});

test("the ops page lists the five demo cards and reloads with the admin token", async () => {
  const page = await chat();
  await page.goto(`${demo.base}/ops`);
  const cards = page.locator("section.agent-card");
  await cards.nth(4).waitFor();
  assert.equal(await cards.count(), 5);
  const ids = await cards.evaluateAll((cs) => cs.map((c) => c.dataset.agent).sort());
  assert.deepEqual(ids, ["exchange_agent", "flight_agent", "hotel_agent", "pickup_agent", "weather_agent"]);
  assert.equal(await page.locator("section.agent-card .badge.done").count(), 5, "all available");
  await page.locator("#counters tbody tr").first().waitFor();
  assert.match(await page.locator("#counters").innerText(), /switchboard_requests_total/);
  await page.getByLabel("管理员令牌").fill(ADMIN_TOKEN);
  await page.getByRole("button", { name: "重新加载配置" }).click();
  await page.locator("#reload-result.ok").waitFor();
  assert.equal(await page.getByLabel("管理员令牌").inputValue(), "", "the token is not kept");
  await page.screenshot({ path: join(shots, "ops.png"), fullPage: true });
  assert.deepEqual(page.errors, []);
});
