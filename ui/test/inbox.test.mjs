// The web inbox in a real browser (Debian's Chromium) against the real server: the list sorted by
// urgency beside the selected call, keyboard triage, the Done view, markdown drawn without HTML,
// confirmations, a refused key; every kind of card (forms too, and an MCP server's page to open),
// refusals that keep the question, replies, cards settled elsewhere, the run page, a restart, phone
// width, and the screenshots of docs/inbox.md.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { join } from "node:path";
import { v1 } from "../../clients/typescript/dist/src/index.js";
import { PUBLIC_URL, SCREENSHOTS, Server, backend, eventually, launchBrowser, startRun } from "./harness.mjs";

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
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.on("request", (request) => requested.add(new URL(request.url()).origin));
});

after(async () => {
  await browser?.close();
  bob?.close();
  await server?.close();
});

const card = (call) => page.locator(`article[data-call="${call.toolCallId}"]`);
const settledCard = (call) => page.locator(`article[data-call="${call.toolCallId}"][data-settled]`);
/** A waiting call's line in the inbox's list. */
const row = (call) => page.locator(`button.row[data-row="${call.toolCallId}"]`);
/** Opens a waiting call from the list; its card in the detail pane. */
const open = async (call) => {
  await row(call).click();
  await card(call).waitFor();
  return card(call);
};
/** The confirmation the page showed last. */
const lastToast = () => page.locator(".toasts .toast").last();
const toastSaying = (pattern) =>
  eventually(`a confirmation matching ${pattern}`, async () => (await page.locator(".toasts .toast").allTextContents()).some((text) => pattern.test(text)));
const rowIds = () => page.locator("button.row").evaluateAll((rows) => rows.map((row) => row.dataset.row));
const answered = async (client, runId, toolCallId, answer) => {
  for await (const frame of client.resumeRun(runId, toolCallId, answer)) {
    if (frame.event?.$case === "answerAccepted") break;
  }
};
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
  await Promise.all(calls.map((call) => row(call).waitFor()));
  await eventually("the count in the title", async () => (await page.title()) === "(3) askuser inbox");
  assert.deepEqual(await rowIds(), calls.map((call) => call.toolCallId), "one run's calls in the order it made them");

  const name = await open(calls[0]);
  await name.locator("textarea").fill("   ");
  await name.getByRole("button", { name: "Send answer" }).click();
  const violation = name.locator('.violations [data-field="answer.text"]');
  await violation.waitFor();
  assert.match(await violation.textContent(), /must not be blank/);
  assert.equal((await runOf(runId)).pendingToolCalls.length, 3, "the refused answer left the question pending");

  await name.locator("textarea").fill("Ada");
  await name.getByRole("button", { name: "Send answer" }).click();
  await toastSaying(new RegExp(`^Answer sent \\(run ${runId.slice(0, 8)}…\\)$`));
  // The answered call leaves the list and the next one is shown.
  await eventually("the answered call to leave the list", async () => (await row(calls[0]).count()) === 0);
  await card(calls[1]).waitFor();
  assert.equal(await row(calls[1]).getAttribute("aria-current"), "true");

  // Keyboard only: the first radio, arrow down to the second (checks it), tab to Send, enter.
  const environment = card(calls[1]);
  await environment.getByRole("radio", { name: /staging/ }).focus();
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("Tab");
  await page.keyboard.press("Enter");
  await eventually("the environment to be answered", async () => (await row(calls[1]).count()) === 0);

  const checks = await open(calls[2]);
  await checks.getByRole("checkbox", { name: "lint" }).check();
  await checks.getByRole("checkbox", { name: "e2e" }).check();
  await checks.getByRole("button", { name: "Send answer" }).click();
  const run = await completed(runId);
  assert.equal(run.outputText, "Thanks Ada: production with lint, e2e");
});

test("declines with a reason, and answers a multi select with none of these", async () => {
  const { runId, calls } = await startRun(bob, "survey", 3);
  const name = await open(calls[0]);
  await name.getByRole("button", { name: "Decline…" }).click();
  await name.getByLabel("Why decline? (optional)").fill("rather not say");
  await name.getByRole("button", { name: "Decline", exact: true }).click();
  await toastSaying(/^Declined \(run /);

  const environment = await open(calls[1]);
  await environment.getByRole("radio", { name: /staging/ }).check();
  await environment.getByRole("button", { name: "Send answer" }).click();
  const checks = await open(calls[2]);
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

test("approves (with a confirmation), rejects with a reason, and edits the arguments (a bad edit shows the schema's error)", async () => {
  const approved = await startRun(bob, "releaser", 1);
  const rejected = await startRun(bob, "releaser", 1);
  const edited = await startRun(bob, "releaser", 1);
  const survey = await startRun(bob, "survey", 3);
  for (const { calls } of [approved, rejected, edited, survey]) await row(calls[0]).waitFor();

  // Counts per kind; the kind filter: approvals only, then every kind again.
  const kinds = page.getByRole("group", { name: "Kind" });
  assert.match(await kinds.locator('[data-kind="approval"]').textContent(), /approval\s*3/);
  assert.match(await kinds.locator('[data-kind="question"]').textContent(), /question\s*3/);
  await kinds.locator('[data-kind="approval"]').click();
  await eventually("questions to be filtered out", async () => (await row(survey.calls[0]).count()) === 0);
  assert.equal(await row(approved.calls[0]).count(), 1);
  await kinds.getByRole("button", { name: /^all/ }).click();
  await row(survey.calls[0]).waitFor();

  const approval = await open(approved.calls[0]);
  assert.match(await approval.locator("pre.arguments").textContent(), /"environment": "production"/);
  await approval.getByRole("button", { name: "Approve" }).click();
  // A confirmation says what happened; the call, approved, now waits for a worker to run the client tool.
  await toastSaying(new RegExp(`^Approved deploy \\(run ${approved.runId.slice(0, 8)}…\\)$`));
  assert.equal(await page.locator(".toasts").getAttribute("role"), "status");
  const waitingRow = page.locator(`button.row.kind-client-tool[data-row="${approved.calls[0].toolCallId}"]`);
  await waitingRow.click();
  const waiting = page.locator(`article.kind-client-tool[data-call="${approved.calls[0].toolCallId}"]`);
  await waiting.waitFor();
  assert.match(await waiting.textContent(), /Approved by you\. Waiting for a worker/);
  await answered(bob, approved.runId, approved.calls[0].toolCallId, { toolOutput: { content: "deployed" } });
  await settledCard(approved.calls[0]).waitFor();
  assert.match(await settledCard(approved.calls[0]).textContent(), /given its output by key:bob/);
  assert.equal((await completed(approved.runId)).outputText, "deploy: deployed");

  const rejection = await open(rejected.calls[0]);
  await rejection.getByRole("button", { name: "Reject…" }).click();
  await rejection.getByLabel("Why reject? (the model reads it)").fill("not on a Friday");
  await rejection.getByRole("button", { name: "Reject", exact: true }).click();
  await toastSaying(/^Rejected deploy \(run /);
  assert.match((await completed(rejected.runId)).outputText, /not on a Friday/);

  const edit = await open(edited.calls[0]);
  await edit.getByRole("button", { name: "Edit arguments…" }).click();
  await edit.locator("textarea").fill('{"service": "api", "environment": "qa"}');
  await edit.getByRole("button", { name: "Approve as edited" }).click();
  await edit.locator(".violations li").first().waitFor();
  assert.match(await edit.locator(".violations").textContent(), /environment/);
  assert.equal(await edit.locator("textarea").getAttribute("aria-invalid"), "true");
  assert.equal((await runOf(edited.runId)).pendingToolCalls[0].kind, v1.SuspendKind.SUSPEND_KIND_APPROVAL, "still waiting for approval");
  await edit.locator("textarea").fill('{"service": "api", "environment": "staging"}');
  await edit.getByRole("button", { name: "Approve as edited" }).click();
  await toastSaying(/^Approved deploy as edited \(run /);
  await page.locator(`button.row.kind-client-tool[data-row="${edited.calls[0].toolCallId}"]`).click();
  const editedWaiting = page.locator(`article.kind-client-tool[data-call="${edited.calls[0].toolCallId}"]`);
  await editedWaiting.waitFor();
  assert.match(await editedWaiting.locator("pre.arguments").textContent(), /"environment": "staging"/);

  // Leave nothing waiting for the tests after this one.
  await answered(bob, edited.runId, edited.calls[0].toolCallId, { toolOutput: { content: "ok" } });
  await bob.cancelRun(survey.runId, "done with it");
  await eventually("the cancelled run's calls to go", async () => (await row(survey.calls[0]).count()) === 0);
});

test("a call settled by another client while shown says who answered, and leaves the list", async () => {
  const { runId, calls } = await startRun(bob, "greeter", 1, { questionTtlMs: 10 * 60_000 });
  await (await open(calls[0])).locator("textarea").waitFor();
  assert.match(await card(calls[0]).locator(".expiry").textContent(), /expires in (9m|10m 0\ds)/);
  assert.match(await row(calls[0]).locator(".expires").textContent(), /expires in (9m|10m 0\ds)/);
  await answered(bob, runId, calls[0].toolCallId, { text: "Grace" });
  await settledCard(calls[0]).waitFor();
  assert.match(await settledCard(calls[0]).textContent(), /answered by key:bob just now/);
  assert.equal(await card(calls[0]).locator("textarea").count(), 0, "nothing left to answer");
  assert.equal(await row(calls[0]).count(), 0);
});

test("sorted by urgency: expiring soonest first, then the oldest; the selected call shows its run's prompt and what it settled so far", async () => {
  await page.goto(`${server.url}/`);
  const old = await startRun(bob, "greeter", 1);
  const survey = await startRun(bob, "survey", 3);
  const later = await startRun(bob, "greeter", 1, { questionTtlMs: 30 * 60_000 });
  const sooner = await startRun(bob, "greeter", 1, { questionTtlMs: 5 * 60_000 });
  const expected = [sooner.calls[0], later.calls[0], old.calls[0], ...survey.calls].map((call) => call.toolCallId);
  const ours = async () => (await rowIds()).filter((id) => expected.includes(id));
  await eventually("the rows in order of urgency", async () => JSON.stringify(await ours()) === JSON.stringify(expected));
  assert.match(await row(sooner.calls[0]).textContent(), /What is your name\?.*greeter.*expires in [45]m/);
  assert.match(await row(old.calls[0]).locator(".age").textContent(), /\ds/);

  // The survey's first question answered elsewhere: its second shows the prompt and the answer so far.
  await answered(bob, survey.runId, survey.calls[0].toolCallId, { text: "Ada" });
  await eventually("the answered call to leave", async () => (await row(survey.calls[0]).count()) === 0);
  await open(survey.calls[1]);
  const context = page.locator(`.detail .run-context[data-run="${survey.runId}"]`);
  await context.locator(".so-far li").waitFor();
  assert.match(await context.locator(".prompt").textContent(), /Prompt · survey.*prompt for survey/);
  // The item may be drawn before its question's text is known (then it names the tool): wait for it.
  const soFar = /^What is your name\? answered by key:bob · just now — Ada$/;
  await eventually("the answer so far under its question", async () => soFar.test(await context.locator(".so-far li").textContent()));

  for (const { runId } of [old, survey, later, sooner]) await bob.cancelRun(runId, "done with it");
  await eventually("the list to empty", async () => (await page.locator("button.row").count()) === 0);
});

test("keyboard triage: j / k move, Enter opens, a approves, r rejects with a reason, / filters (keys typed in a field are text)", async () => {
  const first = await startRun(bob, "releaser", 1);
  const second = await startRun(bob, "releaser", 1);
  const greeted = await startRun(bob, "greeter", 1);
  const ids = [first, second, greeted].map(({ calls }) => calls[0].toolCallId);
  await eventually("three rows", async () => JSON.stringify(await rowIds()) === JSON.stringify(ids));
  const current = () => page.locator('button.row[aria-current="true"]').getAttribute("data-row");
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await eventually("the first call selected", async () => (await current()) === ids[0]);
  await page.keyboard.press("j");
  assert.equal(await current(), ids[1]);
  await page.keyboard.press("j");
  await page.keyboard.press("j");
  assert.equal(await current(), ids[2], "j stops at the last");
  await page.keyboard.press("k");
  await page.keyboard.press("k");
  assert.equal(await current(), ids[0]);

  // a approves the selected approval, says so, and moves on.
  await card(first.calls[0]).waitFor();
  await page.keyboard.press("a");
  await toastSaying(new RegExp(`^Approved deploy \\(run ${first.runId.slice(0, 8)}…\\)$`));
  await eventually("the next call selected", async () => (await current()) === ids[1]);
  await eventually("the approval to be decided", async () => (await runOf(first.runId)).pendingToolCalls[0]?.kind === v1.SuspendKind.SUSPEND_KIND_CLIENT_TOOL);

  // r asks for a reason (the key is not typed into it); Enter sends the rejection.
  await page.keyboard.press("r");
  const reason = card(second.calls[0]).getByLabel("Why reject? (the model reads it)");
  await reason.waitFor();
  // The field takes the focus as it is drawn, which may be a frame after it appears.
  await eventually("the reason to have the focus", () => reason.evaluate((input) => input === document.activeElement));
  assert.equal(await reason.inputValue(), "");
  await page.keyboard.type("just a test, ajkr");
  assert.equal(await reason.inputValue(), "just a test, ajkr", "keys typed in a field are text");
  await page.keyboard.press("Enter");
  await toastSaying(/^Rejected deploy \(run /);
  assert.match((await completed(second.runId)).outputText, /just a test, ajkr/);

  // / filters (the selection follows to what is left); Escape leaves the filter; Enter opens the
  // selected call with its field focused.
  await page.keyboard.press("/");
  const filter = page.getByRole("searchbox", { name: "Filter" });
  await eventually("the filter to have the focus", () => filter.evaluate((input) => input === document.activeElement));
  await page.keyboard.type("name");
  await eventually("the filter to leave the question only", async () => JSON.stringify(await rowIds()) === JSON.stringify([ids[2]]));
  await eventually("the question selected", async () => (await current()) === ids[2]);
  await page.keyboard.press("Escape");
  await page.keyboard.press("Enter");
  const textarea = card(greeted.calls[0]).locator("textarea");
  await eventually("the answer box focused", () => textarea.evaluate((box) => box === document.activeElement));
  await page.keyboard.type("Kay");
  await page.keyboard.press("Control+Enter");
  await toastSaying(/^Answer sent/);
  assert.equal((await completed(greeted.runId)).outputText, "Hello, Kay!");
  await filter.fill("");

  await answered(bob, first.runId, first.calls[0].toolCallId, { toolOutput: { content: "ok" } });
  await eventually("the list to empty", async () => (await page.locator("button.row").count()) === 0);
});

test("markdown in a question, a request's context and an approval's reason is drawn as elements, never as HTML", async () => {
  const question = await bob.ask({
    question:
      '**Ship** the *release* now?\n\n- run `make check`\n- read [the notes](https://example.com/notes) and [this](javascript:alert(1))\n\n' +
      '<img src=x onerror="window.injected = 1"><script>window.injected = 2</script>\n\n```\n$ make deploy\n```',
    context: "The `api` release is **blocked** on you.",
  });
  const approval = await bob.ask({
    approval: { toolName: "drop_table", arguments: { table: "users" }, reason: "Touches **production** data <img src=y onerror=\"window.injected = 3\">" },
  });
  const asked = { toolCallId: question.toolCallId };
  await row(asked).waitFor();
  assert.match(await row(asked).textContent(), /Ship the release now\?.*request/, "the row: plain text, and a request is labelled so");
  const shown = await open(asked);
  const md = shown.locator(".markdown.question");
  assert.equal(await md.locator("strong").first().textContent(), "Ship");
  assert.equal(await md.locator("em").first().textContent(), "release");
  assert.equal(await md.locator("li code").textContent(), "make check");
  assert.equal(await md.locator("pre.md-code").textContent(), "$ make deploy");
  const link = md.getByRole("link", { name: "the notes" });
  assert.equal(await link.getAttribute("href"), "https://example.com/notes");
  assert.match(await link.getAttribute("rel"), /noopener/);
  assert.equal(await md.locator('a[href^="javascript"]').count(), 0, "only http and https become links");
  assert.match(await md.textContent(), /<img src=x onerror="window.injected = 1"><script>window.injected = 2<\/script>/);
  assert.equal(await shown.locator("h3").count(), 0, "the question is not inside a heading");
  assert.equal(await page.locator(".detail img, .detail script").count(), 0, "no element from the question's HTML");
  const context = page.locator(".detail .run-context .prompt");
  await context.waitFor();
  assert.match(await context.textContent(), /Context · request/);
  assert.equal(await context.locator("strong").textContent(), "blocked");
  assert.equal(await context.locator("code").textContent(), "api");

  const reason = (await open({ toolCallId: approval.toolCallId })).locator(".approval-reason");
  assert.equal(await reason.locator("strong").textContent(), "production");
  assert.match(await reason.textContent(), /<img src=y onerror="window.injected = 3">/);
  assert.equal(await page.locator(".detail img").count(), 0);
  assert.equal(await page.evaluate(() => window.injected), undefined, "nothing of it ran");

  await answered(bob, question.runId, question.toolCallId, { text: "yes, ship it" });
  await answered(bob, approval.runId, approval.toolCallId, { reject: "not today" });
});

test("the Done view lists settled calls, newest first, with who settled them, when and the answer; searchable", async () => {
  const { runId, calls } = await startRun(bob, "greeter", 1);
  await (await open(calls[0])).locator("textarea").fill("Dana Scully");
  await card(calls[0]).getByRole("button", { name: "Send answer" }).click();
  await completed(runId);
  await page.getByRole("tab", { name: "Done" }).click();
  const mine = page.locator(`.done-row[data-call="${calls[0].toolCallId}"]`);
  await mine.waitFor();
  assert.match(await mine.locator(".row-title").textContent(), /^answered\s*What is your name\?$/, "what was asked, from the run's events");
  assert.match(await mine.locator(".who").textContent(), /by you \(key:alice\)/);
  assert.equal(await mine.locator(".answer").textContent(), "Dana Scully");
  assert.match(await mine.locator("time").textContent(), /just now/);
  assert.equal(await page.locator(".done-row").first().getAttribute("data-call"), calls[0].toolCallId, "newest first");
  // The request of the markdown test, answered by bob, and its rejected approval.
  const request = page.locator(".done-row", { hasText: "yes, ship it" });
  assert.match(await request.textContent(), /request · by key:bob/);
  assert.match(await page.locator(".done-row", { hasText: "drop_table" }).textContent(), /rejected.*rejected: not today/);

  await page.getByLabel("Search done").fill("scully");
  await eventually("the search to keep one row", async () => (await page.locator(".done-row").count()) === 1);
  assert.equal(await page.locator(".done-row").getAttribute("data-call"), calls[0].toolCallId);
  await page.getByLabel("Search done").fill("nothing like this");
  await page.getByText(/Nothing settled matches/).waitFor();
  await page.getByLabel("Search done").fill("");
  await page.getByRole("tab", { name: /Waiting/ }).click();
});

test("the key dialog says when a key is refused, and stays open until one is taken", async () => {
  const limited = server.key("limited", "default", "agents:read");
  const fresh = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  try {
    await fresh.goto(`${server.url}/`);
    const dialog = fresh.getByRole("dialog");
    await dialog.waitFor();
    await fresh.fill("#credential", "ak_not_a_real_key");
    await fresh.getByRole("button", { name: "Use this key" }).click();
    const error = dialog.getByRole("alert");
    await error.waitFor();
    assert.match(await error.textContent(), /refused this key \(UNAUTHENTICATED\)/);
    assert.equal(await dialog.locator("h2").textContent(), "That key was refused");
    assert.equal(await fresh.locator("#credential").getAttribute("aria-invalid"), "true");

    await fresh.fill("#credential", limited);
    await fresh.getByRole("button", { name: "Use this key" }).click();
    await eventually("the permission error", async () => /PERMISSION_DENIED/.test(await error.textContent()));
    assert.match(await error.textContent(), /runs:read/);
    assert.equal(await dialog.count(), 1, "still open");
    await dialog.screenshot({ path: join(SCREENSHOTS, "inbox-key-refused.png") });

    await fresh.fill("#credential", aliceKey);
    await fresh.getByRole("button", { name: "Use this key" }).click();
    await fresh.locator(".connection.live").waitFor();
    assert.equal(await dialog.count(), 0);
  } finally {
    await fresh.context().close();
  }
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
  await row(calls[0]).waitFor();
  await server.stop();
  await page.locator(".connection.reconnecting").waitFor();
  await server.start();
  await page.locator(".connection.live").waitFor({ timeout: 20_000 });
  await (await open(calls[0])).locator("textarea").fill("after the restart");
  await card(calls[0]).getByRole("button", { name: "Send answer" }).click();
  assert.equal((await completed(runId)).outputText, "Hello, after the restart!");
});

test("a form card: a control per field, pre-filled; refused values shown under their fields, the form still answerable", async () => {
  await page.goto(`${server.url}/`);
  const { runId, calls } = await startRun(bob, "details", 1);
  const form = await open(calls[0]);
  const field = (name) => form.locator(`.field[data-field="${name}"]`);
  assert.equal(await form.locator("h3").textContent(), "The release's details");
  assert.match(await field("version").locator(".chip").textContent(), /^Version$/, "the header chip");
  assert.match(await field("version").locator(".hint").textContent(), /matching \\d\+/);
  // Each default is pre-filled: the number, the switch, the single choice.
  assert.equal(await form.getByLabel(/How many replicas/).inputValue(), "3");
  assert.equal(await form.getByRole("switch", { name: /Post the release/ }).isChecked(), true);
  assert.equal(await form.getByRole("radio", { name: "Europe" }).isChecked(), true);

  // The page checks nothing itself: the server refuses, and says why under each field.
  await form.getByLabel(/The version to release/).fill("v1.4");
  await form.getByLabel(/How many replicas/).fill("50");
  await form.getByRole("button", { name: "Send answers" }).click();
  const versionError = field("version").locator('.violations [data-field=\'answer.form.values["version"]\']');
  await versionError.waitFor();
  assert.match(await versionError.textContent(), /must match the pattern/);
  assert.match(await field("replicas").locator(".violations").textContent(), /the maximum is 20/);
  assert.match(await field("channels").locator(".violations").textContent(), /required/);
  assert.equal(await field("contact").locator(".violations").count(), 0, "an empty optional field is left out, not refused");
  assert.equal(await form.getByLabel(/The version to release/).getAttribute("aria-invalid"), "true");
  assert.equal((await runOf(runId)).pendingToolCalls.length, 1, "the refused form is still pending");
  await form.screenshot({ path: join(SCREENSHOTS, "form-fields.png") });

  await form.getByLabel(/The version to release/).fill("1.4.2");
  await form.getByLabel(/Who to ask/).fill("ops@example.com");
  await form.getByLabel(/How many replicas/).fill("5");
  await form.getByRole("switch", { name: /Post the release/ }).click();
  await form.getByRole("radio", { name: "United States" }).check();
  await form.getByRole("checkbox", { name: "status page" }).check();
  await form.getByRole("checkbox", { name: "chat" }).check();
  await form.getByRole("button", { name: "Send answers" }).click();
  await toastSaying(/^Answers sent \(run /);
  const run = await completed(runId);
  assert.deepEqual(JSON.parse(run.outputText), {
    action: "accept",
    content: { version: "1.4.2", contact: "ops@example.com", replicas: 5, announce: false, region: "us", channels: ["status page", "chat"] },
  });
});

test("ask_user_questions: header chips, the recommended option first, its preview beside the focused option (markdown, never HTML), Other", async () => {
  const { runId, calls } = await startRun(bob, "planner", 1);
  const form = await open(calls[0]);
  assert.equal(await form.locator("h3").textContent(), "2 questions");
  const rollout = form.getByRole("group", { name: /How should the release roll out/ });
  assert.equal(await rollout.locator(".chip").first().textContent(), "Rollout");
  const radios = rollout.getByRole("radio");
  assert.equal(await radios.first().getAttribute("value"), "Canary (Recommended)", "the recommended option comes first");
  assert.match(await rollout.locator(".option").first().textContent(), /^Canary\s*Recommended/, "and is marked");

  // Before anything is focused, the recommended (first) option's preview: a mock-up, in monospace.
  const preview = rollout.locator(".preview");
  assert.equal(await preview.getAttribute("aria-label"), "Preview: Canary");
  assert.equal(await preview.locator("pre.preview-code").textContent(), "stage 1:  5 % for 10 min\nstage 2: 100 %");
  assert.match(await preview.locator("pre").evaluate((pre) => getComputedStyle(pre).fontFamily), /mono/i);
  // Focus moves it: markdown drawn as elements, its HTML as text.
  await rollout.getByRole("radio", { name: /Blue-green/ }).focus();
  assert.equal(await preview.getAttribute("aria-label"), "Preview: Blue-green");
  assert.equal(await preview.locator(".md-heading").textContent(), "Blue-green");
  assert.equal(await preview.locator("li strong").textContent(), "one");
  assert.equal(await preview.locator("li code").textContent(), "rollback");
  assert.match(await preview.textContent(), /<img src=x onerror="window.injected = true"> stays text/);
  assert.equal(await preview.locator("img").count(), 0, "no element from the preview's HTML");
  assert.equal(await page.evaluate(() => window.injected), undefined);
  // Hovering shows another's.
  await rollout.locator(".option").first().hover();
  assert.equal(await preview.getAttribute("aria-label"), "Preview: Canary");
  await form.screenshot({ path: join(SCREENSHOTS, "form.png") });

  // Typing in "Other" chooses it instead of an offered option.
  await rollout.getByRole("radio", { name: /Canary/ }).check();
  await rollout.getByLabel(/Other: your own answer/).fill("one zone at a time");
  assert.equal(await rollout.getByRole("radio", { name: "Other…" }).isChecked(), true);
  assert.equal(await rollout.getByRole("radio", { name: /Canary/ }).isChecked(), false);
  const checks = form.getByRole("group", { name: /Which checks must pass first/ });
  await checks.getByRole("checkbox", { name: /^unit/ }).check();
  await checks.getByRole("checkbox", { name: /^load/ }).check();
  await form.getByRole("button", { name: "Send answers" }).click();
  const run = await completed(runId);
  assert.deepEqual(JSON.parse(run.outputText), {
    answers: { "How should the release roll out?": "one zone at a time", "Which checks must pass first?": ["unit", "load"] },
  });
});

test("replies instead of answering, to a form and to a question; a blank reply is refused under it", async () => {
  const planned = await startRun(bob, "planner", 1);
  const greeted = await startRun(bob, "greeter", 1);
  const form = await open(planned.calls[0]);
  await form.getByRole("button", { name: "Reply instead…" }).click();
  const reply = form.getByLabel(/Your reply/);
  await reply.fill("  ");
  await form.getByRole("button", { name: "Send reply" }).click();
  await form.locator('.violations [data-field="answer.reply"]').waitFor();
  assert.match(await form.locator('.violations [data-field="answer.reply"]').textContent(), /must not be blank/);
  assert.equal(await reply.getAttribute("aria-invalid"), "true");
  await reply.fill("Ask Dana, she owns it");
  await form.getByRole("button", { name: "Send reply" }).click();
  await toastSaying(/^Reply sent \(run /);
  const run = await completed(planned.runId);
  assert.equal(run.outputText, "User replied instead of answering: Ask Dana, she owns it");
  assert.equal(run.settledToolCalls[0].kind, ToolResultKind.TOOL_RESULT_KIND_REPLIED);

  const question = await open(greeted.calls[0]);
  await question.getByRole("button", { name: "Reply instead…" }).click();
  await question.getByLabel(/Your reply/).fill("I would rather not say");
  await question.getByRole("button", { name: "Send reply" }).click();
  const greeting = await completed(greeted.runId);
  assert.equal(greeting.settledToolCalls[0].kind, ToolResultKind.TOOL_RESULT_KIND_REPLIED);
  assert.match(greeting.outputText, /I would rather not say/);
});

test("an MCP server's URL-mode elicitation: the page to open as a link that askuser never opens; Done accepts, Decline declines", async () => {
  const signInUrl = "https://auth.example.com/authorize?service=api";
  await page.goto(`${server.url}/`);
  await eventually("the MCP server to be up", async () => {
    const signer = (await bob.listAgents()).find((agent) => agent.agentId === "signer");
    return signer?.mcpServers.length === 1 && signer.mcpServers[0].up;
  });
  const accepted = await startRun(bob, "signer", 1);
  assert.equal(accepted.calls[0].form?.url, signInUrl);
  const form = await open(accepted.calls[0]);
  assert.equal(await form.locator("h3").textContent(), "Sign in to api to let the deploy read its settings");
  const link = form.getByRole("link", { name: signInUrl });
  assert.equal(await link.textContent(), signInUrl, "the whole address is shown");
  assert.equal(await link.getAttribute("href"), signInUrl);
  assert.equal(await link.getAttribute("target"), "_blank");
  assert.deepEqual((await link.getAttribute("rel")).split(" ").sort(), ["noopener", "noreferrer"]);
  assert.equal(await form.locator(".url-host").textContent(), "auth.example.com");
  assert.match(await form.textContent(), /askuser does not open this page/);
  assert.equal(await form.locator(".field, input, textarea").count(), 0, "a page to open has no fields");
  assert.equal(await form.getByRole("button", { name: "Reply instead…" }).count(), 0);
  await form.screenshot({ path: join(SCREENSHOTS, "form-url.png") });

  await form.getByRole("button", { name: "Done" }).click();
  await toastSaying(/^Answers sent \(run /);
  assert.equal((await completed(accepted.runId)).outputText, "api: sign-in accept");

  const declined = await startRun(bob, "signer", 1);
  await (await open(declined.calls[0])).getByRole("button", { name: "Decline", exact: true }).click();
  await toastSaying(/^Declined \(run /);
  assert.equal((await completed(declined.runId)).outputText, "api: sign-in decline");
  assert.deepEqual([...requested], [server.url], "nothing fetched the page but the person");
});

test("an answer link from a webhook opens its one call without a key, settles it once as its assignee, then opens nothing", async () => {
  const { runId, calls } = await startRun(bob, "signoff", 1);
  const body = await eventually("the call.suspended webhook", () =>
    server.webhooks.find((b) => b.type === "call.suspended" && b.data.run.run_id === runId),
  );
  assert.deepEqual(Object.keys(body.data.answer_urls), ["key:alice"]);
  const link = new URL(body.data.answer_url);
  assert.equal(link.origin + link.pathname, `${PUBLIC_URL}/answer`);
  assert.match(link.hash, /^#al1\./);
  // The same path and token on this test's server (its --public-url is not reachable here).
  const url = `${server.url}/answer${link.hash}`;
  const phone = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
  try {
    await phone.goto(url);
    const linked = phone.locator(`article[data-call="${calls[0].toolCallId}"]`);
    await linked.waitFor();
    assert.equal(await phone.getByRole("dialog").count(), 0, "no key asked for");
    assert.match(await phone.locator("main.answer h2").textContent(), /key:alice/);
    // The run's prompt comes with GetRun, after the call is drawn: wait for it, not a snapshot of it.
    await phone.locator(".run-context").filter({ hasText: /prompt for signoff/ }).waitFor();
    assert.equal(await linked.locator("strong").first().textContent(), "release 1.4", "markdown drawn as elements");
    await phone.screenshot({ path: join(SCREENSHOTS, "answer-link-390.png"), fullPage: true });

    await linked.getByRole("radio", { name: "yes" }).check();
    await linked.getByRole("button", { name: "Send answer" }).click();
    await phone.locator("[data-link-closed]").filter({ hasText: "your answer is recorded" }).waitFor();
    const run = await completed(runId);
    assert.equal(run.outputText, "Sign-off: yes");
    assert.equal(run.settledToolCalls[0].settledBy.subject, "link:key:alice");

    // Opened again: the call no longer waits, so the link opens nothing.
    await phone.goto(url);
    await phone.reload();
    const closed = phone.locator("[data-link-closed]");
    await closed.waitFor();
    assert.match(await closed.textContent(), /no longer waits/);
    assert.equal(await phone.locator("article.card").count(), 0);

    // A token cut short is refused, and the page says so without asking for a key.
    await phone.goto(url.slice(0, -3));
    await phone.reload();
    await phone.locator("[data-link-closed]").filter({ hasText: "not valid" }).waitFor();
    assert.equal(await phone.getByRole("dialog").count(), 0);
  } finally {
    await phone.context().close();
  }
});

test("screenshots at 1280 and 390 px wide; readable at phone width, where the list opens a call and goes back", async () => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${server.url}/`);
  const survey = await startRun(bob, "survey", 3);
  const release = await startRun(bob, "releaser", 1);
  const greeted = await startRun(bob, "greeter", 1, { questionTtlMs: 20 * 60_000 });
  const request = await bob.ask({
    question: "Which **region** should take the traffic while `eu-west` is drained?\n\n- *us-east*: closest spare capacity\n- *eu-central*: keeps data in the EU",
    options: ["us-east", "eu-central"],
    context: "Draining **eu-west** for the kernel upgrade (ticket [OPS-1234](https://example.com/OPS-1234)).",
    assignees: ["key:alice"],
    ttlMs: 8 * 60_000,
  });
  await answered(bob, survey.runId, survey.calls[0].toolCallId, { text: "Ada" });
  const planned = await startRun(bob, "planner", 1);
  await row(planned.calls[0]).waitFor();
  await open({ toolCallId: request.toolCallId });
  await page.locator(".detail .run-context .prompt").waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, "inbox.png") });
  await open(survey.calls[1]);
  await page.locator(".detail .so-far li").waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, "inbox-run-context.png") });
  await page.getByRole("tab", { name: "Done" }).click();
  await page.locator(".done-row").first().waitFor();
  await page.screenshot({ path: join(SCREENSHOTS, "inbox-done.png") });
  await page.getByRole("tab", { name: /Waiting/ }).click();

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${server.url}/`);
  await row(planned.calls[0]).waitFor();
  assert.equal(await page.locator(".detail").isVisible(), false, "the list first");
  await page.screenshot({ path: join(SCREENSHOTS, "inbox-phone.png") });
  const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok((await overflow()) <= 0, `the list is ${await overflow()}px wider than the screen`);
  await open({ toolCallId: request.toolCallId });
  assert.equal(await page.locator(".list").isVisible(), false, "the call instead of the list");
  assert.ok((await overflow()) <= 0, `the call is ${await overflow()}px wider than the screen`);
  await page.screenshot({ path: join(SCREENSHOTS, "inbox-phone-call.png") });
  await page.getByRole("button", { name: "← All waiting calls" }).click();
  await row(planned.calls[0]).click();
  await card(planned.calls[0]).locator(".preview").waitFor();
  assert.ok((await overflow()) <= 0, `the form is ${await overflow()}px wider than the screen`);
  await page.locator("body").click({ position: { x: 2, y: 70 } });
  await page.keyboard.press("Escape");
  await row(planned.calls[0]).waitFor();
  assert.equal(await page.locator(".detail").isVisible(), false, "Esc goes back to the list");

  for (const { runId } of [survey, release, greeted, request, planned]) await bob.cancelRun(runId, "done with it");
});
