// The web inbox in a real browser (Debian's Chromium) against the real server: every kind of card,
// refusals that keep the question, cards settled elsewhere, the run page, a restart, phone width.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { join } from "node:path";
import { v1 } from "../../clients/typescript/dist/src/index.js";
import { SCREENSHOTS, Server, backend, eventually, launchBrowser, startRun } from "./harness.mjs";

const { RunStatus, ToolResultKind } = v1;

let server, browser, page, bob, aliceKey;
const requested = new Set();

before(async () => {
  server = new Server();
  aliceKey = server.key("alice");
  const bobKey = server.key("bob");
  await server.start();
  bob = backend(server, bobKey);
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1000, height: 900 } })).newPage();
  page.on("request", (request) => requested.add(new URL(request.url()).origin));
});

after(async () => {
  await browser?.close();
  bob?.close();
  await server?.stop();
});

const card = (call) => page.locator(`article[data-call="${call.toolCallId}"]`);
const settledCard = (call) => page.locator(`article[data-call="${call.toolCallId}"][data-settled]`);
const runOf = (runId) => bob.getRun(runId);
const completed = (runId) =>
  eventually(`run ${runId} to complete`, async () => {
    const run = await runOf(runId);
    return run.status === RunStatus.RUN_STATUS_COMPLETED && run;
  });

test("asks for a key once per tab, then shows the live inbox, from its own origin only", async () => {
  await page.goto(`${server.url}/`);
  await page.getByRole("dialog").waitFor();
  await page.fill("#credential", aliceKey);
  await page.getByRole("button", { name: "Use this key" }).click();
  await page.locator(".connection.live").waitFor();
  await page.reload();
  await page.locator(".connection.live").waitFor();
  assert.equal(await page.getByRole("dialog").count(), 0, "the key is kept for the tab");
  assert.deepEqual([...requested], [server.url], "no request leaves the server's origin");
});

test("answers free text, single select (by keyboard) and multi select; a bad answer keeps the question", async () => {
  const { runId, calls } = await startRun(bob, "survey", 3);
  const [name, environment, checks] = calls.map(card);
  await Promise.all([name, environment, checks].map((c) => c.waitFor()));
  await eventually("the count in the title", async () => (await page.title()) === "(3) askuser inbox");

  await name.locator("textarea").fill("   ");
  await name.getByRole("button", { name: "Send answer" }).click();
  const violation = name.locator('.violations [data-field="answer.text"]');
  await violation.waitFor();
  assert.match(await violation.textContent(), /must not be blank/);
  assert.equal((await runOf(runId)).pendingToolCalls.length, 3, "the refused answer left the question pending");

  await name.locator("textarea").fill("Ada");
  await name.getByRole("button", { name: "Send answer" }).click();
  await settledCard(calls[0]).waitFor();
  assert.match(await settledCard(calls[0]).textContent(), /answered by you \(key:alice\)/);

  // Keyboard only: the first radio, arrow down to the second (checks it), tab to Send, enter.
  await environment.getByRole("radio", { name: /staging/ }).focus();
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("Tab");
  await page.keyboard.press("Enter");
  await settledCard(calls[1]).waitFor();

  await checks.getByRole("checkbox", { name: "lint" }).check();
  await checks.getByRole("checkbox", { name: "e2e" }).check();
  await checks.getByRole("button", { name: "Send answer" }).click();
  const run = await completed(runId);
  assert.equal(run.outputText, "Thanks Ada: production with lint, e2e");
});

test("declines with a reason, and answers a multi select with none of these", async () => {
  const { runId, calls } = await startRun(bob, "survey", 3);
  const [name, environment, checks] = calls.map(card);
  await name.getByRole("button", { name: "Decline…" }).click();
  await name.getByLabel("Why decline? (optional)").fill("rather not say");
  await name.getByRole("button", { name: "Decline", exact: true }).click();
  await settledCard(calls[0]).waitFor();
  assert.match(await settledCard(calls[0]).textContent(), /declined by you/);

  await environment.getByRole("radio", { name: /staging/ }).check();
  await environment.getByRole("button", { name: "Send answer" }).click();
  await checks.getByRole("checkbox", { name: "lint" }).check();
  await checks.getByRole("checkbox", { name: "None of these" }).check();
  assert.equal(await checks.getByRole("checkbox", { name: "lint" }).isChecked(), false, "none of these clears the others");
  await checks.getByRole("button", { name: "Send answer" }).click();
  const run = await completed(runId);
  assert.deepEqual(
    run.settledToolCalls.map((call) => call.kind),
    [ToolResultKind.TOOL_RESULT_KIND_DECLINED, ToolResultKind.TOOL_RESULT_KIND_ANSWERED, ToolResultKind.TOOL_RESULT_KIND_ANSWERED],
  );
  assert.match(run.outputText, /staging with $/);
});

test("approves, rejects with a reason, and edits the arguments (a bad edit shows the schema's error)", async () => {
  const approved = await startRun(bob, "releaser", 1);
  const rejected = await startRun(bob, "releaser", 1);
  const edited = await startRun(bob, "releaser", 1);
  const survey = await startRun(bob, "survey", 3);
  for (const { calls } of [approved, rejected, edited, survey]) await card(calls[0]).waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, "inbox.png"), fullPage: true });

  // The kind filter: approvals only, then every kind again.
  const kind = page.getByLabel("Kind");
  await kind.selectOption({ label: "approval" });
  await eventually("questions to be filtered out", async () => (await card(survey.calls[0]).count()) === 0);
  assert.equal(await card(approved.calls[0]).count(), 1);
  await kind.selectOption({ label: "All kinds" });
  await card(survey.calls[0]).waitFor();

  const approval = card(approved.calls[0]);
  assert.match(await approval.locator("pre.arguments").textContent(), /"environment": "production"/);
  await approval.getByRole("button", { name: "Approve" }).click();
  // Approved, the call now waits for a worker to run the client tool.
  const waiting = page.locator(`article.kind-client-tool[data-call="${approved.calls[0].toolCallId}"]`);
  await waiting.waitFor();
  assert.match(await waiting.textContent(), /Waiting for a worker/);
  for await (const frame of bob.resumeRun(approved.runId, approved.calls[0].toolCallId, { toolOutput: { content: "deployed" } })) {
    if (frame.event?.$case === "answerAccepted") break;
  }
  await settledCard(approved.calls[0]).waitFor();
  assert.match(await settledCard(approved.calls[0]).textContent(), /given its output by key:bob/);
  assert.equal((await completed(approved.runId)).outputText, "deploy: deployed");

  const rejection = card(rejected.calls[0]);
  await rejection.getByRole("button", { name: "Reject…" }).click();
  await rejection.getByLabel("Why reject? (the model reads it)").fill("not on a Friday");
  await rejection.getByRole("button", { name: "Reject", exact: true }).click();
  await settledCard(rejected.calls[0]).waitFor();
  assert.match(await settledCard(rejected.calls[0]).textContent(), /rejected by you/);
  assert.match((await completed(rejected.runId)).outputText, /not on a Friday/);

  const edit = card(edited.calls[0]);
  await edit.getByRole("button", { name: "Edit arguments…" }).click();
  await edit.locator("textarea").fill('{"service": "api", "environment": "qa"}');
  await edit.getByRole("button", { name: "Approve as edited" }).click();
  await edit.locator(".violations li").first().waitFor();
  assert.match(await edit.locator(".violations").textContent(), /environment/);
  assert.equal(await edit.locator("textarea").getAttribute("aria-invalid"), "true");
  assert.equal((await runOf(edited.runId)).pendingToolCalls[0].kind, v1.SuspendKind.SUSPEND_KIND_APPROVAL, "still waiting for approval");
  await edit.locator("textarea").fill('{"service": "api", "environment": "staging"}');
  await edit.getByRole("button", { name: "Approve as edited" }).click();
  const editedWaiting = page.locator(`article.kind-client-tool[data-call="${edited.calls[0].toolCallId}"]`);
  await editedWaiting.waitFor();
  assert.match(await editedWaiting.locator("pre.arguments").textContent(), /"environment": "staging"/);

  // Leave nothing waiting for the tests after this one.
  for await (const frame of bob.resumeRun(edited.runId, edited.calls[0].toolCallId, { toolOutput: { content: "ok" } })) {
    if (frame.event?.$case === "answerAccepted") break;
  }
  await bob.cancelRun(survey.runId, "done with it");
  await eventually("the cancelled run's cards to go", async () => (await card(survey.calls[0]).count()) === 0 || (await settledCard(survey.calls[0]).count()) === 1);
});

test("a card settled by another client goes away live, saying who answered", async () => {
  const { runId, calls } = await startRun(bob, "greeter", 1, { questionTtlMs: 10 * 60_000 });
  await card(calls[0]).locator("textarea").waitFor();
  assert.match(await card(calls[0]).locator(".expiry").textContent(), /expires in (9m|10m 00s)/);
  for await (const frame of bob.resumeRun(runId, calls[0].toolCallId, { text: "Grace" })) {
    if (frame.event?.$case === "answerAccepted") break;
  }
  await settledCard(calls[0]).waitFor();
  assert.match(await settledCard(calls[0]).textContent(), /answered by key:bob just now/);
  assert.equal(await card(calls[0]).locator("textarea").count(), 0, "nothing left to answer");
});

test("the run page follows a run to completion, with a deep link per question", async () => {
  const { runId, calls } = await startRun(bob, "survey", 3);
  await page.goto(`${server.url}/runs/${runId}#${calls[1].toolCallId}`);
  const target = page.locator(`[id="${calls[1].toolCallId}"]`);
  await target.waitFor();
  assert.match((await target.getAttribute("class")) ?? "", /targeted/, "the linked question is marked");
  assert.match(await page.locator(".entry.prompt").textContent(), /prompt for survey/);

  await card(calls[0]).locator("textarea").fill("Lin");
  await card(calls[0]).getByRole("button", { name: "Send answer" }).click();
  await card(calls[1]).getByRole("radio", { name: /staging/ }).check();
  await card(calls[1]).getByRole("button", { name: "Send answer" }).click();
  await card(calls[2]).getByRole("checkbox", { name: "unit" }).check();
  await card(calls[2]).getByRole("button", { name: "Send answer" }).click();
  await page.locator('[data-end="completed"]').waitFor();
  assert.equal(await page.locator(".entry.text").last().textContent(), "AgentThanks Lin: staging with unit");
  assert.match(await page.locator(`[id="${calls[0].toolCallId}"]`).textContent(), /answered by key:alice/);
  assert.equal(await page.locator(".run-status").getAttribute("data-status"), "completed");
  await page.screenshot({ path: join(SCREENSHOTS, "run.png"), fullPage: true });
});

test("the inbox survives a server restart: it reconnects and shows the same pending set", async () => {
  await page.goto(`${server.url}/`);
  const { runId, calls } = await startRun(bob, "greeter", 1);
  await card(calls[0]).waitFor();
  await server.stop();
  await page.locator(".connection.reconnecting").waitFor();
  await server.start();
  await page.locator(".connection.live").waitFor({ timeout: 20_000 });
  await card(calls[0]).locator("textarea").fill("after the restart");
  await card(calls[0]).getByRole("button", { name: "Send answer" }).click();
  assert.equal((await completed(runId)).outputText, "Hello, after the restart!");
});

test("is readable at phone width", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${server.url}/`);
  const { calls } = await startRun(bob, "survey", 3);
  await card(calls[2]).waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the screen`);
  await page.screenshot({ path: join(SCREENSHOTS, "inbox-phone.png"), fullPage: true });
});
