// The web inbox in a real browser (Debian's Chromium) against the real server: every kind of card
// (forms too, and an MCP server's page to open), refusals that keep the question, replies, cards
// settled elsewhere, the run page, a restart, phone width.
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

test("a form card: a control per field, pre-filled; refused values shown under their fields, the form still answerable", async () => {
  await page.goto(`${server.url}/`);
  const { runId, calls } = await startRun(bob, "details", 1);
  const form = card(calls[0]);
  await form.waitFor();
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
  await settledCard(calls[0]).waitFor();
  assert.match(await settledCard(calls[0]).textContent(), /The release's details: answered by you/);
  const run = await completed(runId);
  assert.deepEqual(JSON.parse(run.outputText), {
    action: "accept",
    content: { version: "1.4.2", contact: "ops@example.com", replicas: 5, announce: false, region: "us", channels: ["status page", "chat"] },
  });
});

test("ask_user_questions: header chips, the recommended option first, its preview beside the focused option (markdown, never HTML), Other", async () => {
  const { runId, calls } = await startRun(bob, "planner", 1);
  const form = card(calls[0]);
  await form.waitFor();
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
  const form = card(planned.calls[0]);
  await form.getByRole("button", { name: "Reply instead…" }).click();
  const reply = form.getByLabel(/Your reply/);
  await reply.fill("  ");
  await form.getByRole("button", { name: "Send reply" }).click();
  await form.locator('.violations [data-field="answer.reply"]').waitFor();
  assert.match(await form.locator('.violations [data-field="answer.reply"]').textContent(), /must not be blank/);
  assert.equal(await reply.getAttribute("aria-invalid"), "true");
  await reply.fill("Ask Dana, she owns it");
  await form.getByRole("button", { name: "Send reply" }).click();
  await settledCard(planned.calls[0]).waitFor();
  assert.match(await settledCard(planned.calls[0]).textContent(), /replied to by you/);
  const run = await completed(planned.runId);
  assert.equal(run.outputText, "User replied instead of answering: Ask Dana, she owns it");
  assert.equal(run.settledToolCalls[0].kind, ToolResultKind.TOOL_RESULT_KIND_REPLIED);

  const question = card(greeted.calls[0]);
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
  const form = card(accepted.calls[0]);
  await form.waitFor();
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
  await settledCard(accepted.calls[0]).waitFor();
  // The call goes on at the tool rather than settle with a result kind, so the card says "settled".
  assert.match(await settledCard(accepted.calls[0]).textContent(), /by you/);
  assert.equal((await completed(accepted.runId)).outputText, "api: sign-in accept");

  const declined = await startRun(bob, "signer", 1);
  await card(declined.calls[0]).getByRole("button", { name: "Decline", exact: true }).click();
  await settledCard(declined.calls[0]).waitFor();
  assert.equal((await completed(declined.runId)).outputText, "api: sign-in decline");
  assert.deepEqual([...requested], [server.url], "nothing fetched the page but the person");
});

test("is readable at phone width", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${server.url}/`);
  const { calls } = await startRun(bob, "survey", 3);
  await card(calls[2]).waitFor();
  const planned = await startRun(bob, "planner", 1);
  await card(planned.calls[0]).locator(".preview").waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the screen`);
  await page.screenshot({ path: join(SCREENSHOTS, "inbox-phone.png"), fullPage: true });
});
