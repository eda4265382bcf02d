// One card per waiting call, by kind: a question (free text, single or multi select, decline), a
// form (form.tsx), an approval (approve, reject with a reason, edit the arguments), or a client tool
// waiting for a worker. A question or a form may be replied to in prose instead.
import { useState } from "preact/hooks";
import { SelectionMode, SuspendKind, type Form, type SuspendPayload } from "../../clients/typescript/src/web/index";
import type { PendingItem, SettledItem } from "./feed";
import { callKey } from "./feed";
import { FormQuestion } from "./form";
import { age, agentLabel, ago, countdown, ms, prettyJson, settledVerb, settlerName, KIND_NAMES } from "./format";
import { Markdown, plainLine } from "./markdown";
import { Link, runPath, useNow } from "./router";
import { settledHere, useSubmission, type Submission } from "./submit";
import { useTriageActions } from "./triage";
import type { Violation } from "../../clients/typescript/src/web/index";

export function CallCard({ item, showRun = true }: { item: PendingItem; showRun?: boolean }) {
  const submission = useSubmission(item);
  const { call } = item;
  return (
    <article class={`card kind-${KIND_NAMES[call.kind].replace(" ", "-")}`} data-call={call.toolCallId} aria-label={plainLine(title(item))}>
      <CardHeader item={item} showRun={showRun} />
      {call.kind === SuspendKind.QUESTION && <QuestionForm item={item} submission={submission} />}
      {call.kind === SuspendKind.FORM && <FormQuestion item={item} submission={submission} />}
      {call.kind === SuspendKind.APPROVAL && <ApprovalForm item={item} submission={submission} />}
      {call.kind === SuspendKind.CLIENT_TOOL && <WaitingForWorker item={item} />}
      {submission.sent && <p class="status">Sent; waiting for the server to settle it…</p>}
      {submission.error && (
        <p class="error" role="alert">
          {submission.error}
        </p>
      )}
    </article>
  );
}

/** A card whose call was settled while shown: who settled it, and when. */
export function SettledCard({ item }: { item: SettledItem }) {
  const now = useNow(5000);
  const who = settledHere.get(callKey(item.runId, item.call.toolCallId)) === item.call.kind
    ? `you${item.settledBy?.subject ? ` (${item.settledBy.subject})` : ""}`
    : settlerName(item.settledBy);
  return (
    <article class="card settled" data-call={item.call.toolCallId} data-settled="true" aria-label={plainLine(title(item))}>
      <p>
        <strong>{plainLine(title(item))}</strong>: {settledVerb(item.kind)}
        {who ? ` by ${who}` : ""} {ago(item.at, now)}.
      </p>
    </article>
  );
}

function title({ call }: PendingItem): string {
  if (call.kind === SuspendKind.QUESTION || call.kind === SuspendKind.FORM) return callTitle(call);
  if (call.kind === SuspendKind.APPROVAL) return `Approve ${call.toolName}?`;
  return `${call.toolName} (client tool)`;
}

/** What a question or a form asks, in a line; the tool's name for any other call. */
export function callTitle(call: { toolName: string; suspendPayload?: SuspendPayload; form?: Form }): string {
  const form = call.form;
  if (form) {
    const only = form.url ? "A page to open" : form.fields.length === 1 ? form.fields[0].question : `${form.fields.length} questions`;
    return form.title || form.message || only;
  }
  return call.suspendPayload?.question || call.toolName;
}

function CardHeader({ item, showRun }: { item: PendingItem; showRun: boolean }) {
  const now = useNow();
  const { call } = item;
  const expires = ms(call.expireTime);
  const since = ms(call.suspendTime);
  const question = call.kind === SuspendKind.QUESTION ? call.suspendPayload?.question : undefined;
  return (
    <header>
      <p class="meta">
        <span class="badge">{KIND_NAMES[call.kind]}</span> {agentLabel(item.agentId)} · {call.toolName}
        {showRun && (
          <>
            {" · "}
            <Link href={runPath(item.runId, call.toolCallId)}>run {item.runId.slice(-8)}</Link>
          </>
        )}
        {since !== undefined && (
          <span class="age" title={new Date(since).toLocaleString()}>
            {" · "}waiting {age(since, now)}
          </span>
        )}
        {expires !== undefined && (
          <span class="expiry" title={new Date(expires).toLocaleString()}>
            {" · "}expires {countdown(expires, now)}
          </span>
        )}
      </p>
      {call.assignees.length > 0 && <p class="meta">For: {call.assignees.join(", ")}</p>}
      {/* A question is markdown (a model writes it): drawn as elements, never inside a heading. */}
      {question ? <Markdown text={question} links class="question" /> : <h3>{title(item)}</h3>}
    </header>
  );
}

export function Violations({ list, id }: { list: Violation[]; id: string }) {
  if (list.length === 0) return null;
  return (
    <ul class="violations" id={id} role="alert">
      {list.map((v) => (
        <li key={v.field} data-field={v.field}>
          <code>{v.field}</code>: {v.description}
        </li>
      ))}
    </ul>
  );
}

function QuestionForm({ item, submission }: { item: PendingItem; submission: Submission }) {
  const payload = item.call.suspendPayload;
  const options = payload?.options ?? [];
  const mode =
    options.length === 0
      ? "text"
      : payload?.selectionMode === SelectionMode.MULTI_SELECT
        ? "multi"
        : "single";
  const [text, setText] = useState("");
  const [chosen, setChosen] = useState<string[]>([]);
  const [none, setNone] = useState(false);
  const [aside, setAside] = useState<Aside>();
  const id = item.call.toolCallId;
  const errorsId = `errors-${id}`;
  const answerViolations = submission.violations.filter((v) => !v.field.startsWith("answer.decline") && !v.field.startsWith("answer.reply"));
  const ready = mode === "text" ? text !== "" : mode === "single" ? chosen.length === 1 : chosen.length > 0 || none;
  const send = () => {
    if (!ready || submission.busy) return;
    void submission.submit(
      mode === "text"
        ? { text }
        : { selections: mode === "multi" && none ? [] : chosen },
    );
  };
  return (
    <>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          send();
        }}
      >
        {mode === "text" && (
          <>
            <label for={`text-${id}`}>Your answer</label>
            <textarea
              id={`text-${id}`}
              rows={3}
              value={text}
              aria-invalid={answerViolations.length > 0}
              aria-describedby={errorsId}
              onInput={(event) => setText(event.currentTarget.value)}
              onKeyDown={(event) => {
                if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
                  event.preventDefault();
                  send();
                }
              }}
            />
          </>
        )}
        {mode !== "text" && (
          <fieldset aria-invalid={answerViolations.length > 0} aria-describedby={errorsId}>
            <legend>{mode === "multi" ? "Choose any" : "Choose one"}</legend>
            {options.map((option) => (
              <label class="option" key={option.label}>
                <input
                  type={mode === "multi" ? "checkbox" : "radio"}
                  name={`choice-${id}`}
                  value={option.label}
                  checked={chosen.includes(option.label)}
                  onChange={(event) => {
                    const on = event.currentTarget.checked;
                    setNone(false);
                    setChosen(
                      mode === "single"
                        ? [option.label]
                        : on
                          ? [...chosen, option.label]
                          : chosen.filter((label) => label !== option.label),
                    );
                  }}
                />
                <span>
                  <span class="label">{option.label}</span>
                  {option.description && <span class="description">{option.description}</span>}
                </span>
              </label>
            ))}
            {mode === "multi" && (
              <label class="option none">
                <input
                  type="checkbox"
                  name={`none-${id}`}
                  checked={none}
                  onChange={(event) => {
                    setNone(event.currentTarget.checked);
                    if (event.currentTarget.checked) setChosen([]);
                  }}
                />
                <span class="label">None of these</span>
              </label>
            )}
          </fieldset>
        )}
        <Violations list={answerViolations} id={errorsId} />
        <div class="actions">
          <button type="submit" class="primary" disabled={!ready || submission.busy}>
            Send answer
          </button>
          <AsideActions aside={aside} setAside={setAside} busy={submission.busy} />
        </div>
      </form>
      <AsideForm aside={aside} item={item} submission={submission} onBack={() => setAside(undefined)} />
    </>
  );
}

/** What a question or a form may get instead of an answer. */
export type Aside = "decline" | "reply" | undefined;

/** *Decline…* and *Reply instead…*, beside a question's or a form's send button. */
export function AsideActions({ aside, setAside, busy }: { aside: Aside; setAside: (aside: Aside) => void; busy: boolean }) {
  return (
    <>
      {aside !== "decline" && (
        <button type="button" onClick={() => setAside("decline")} disabled={busy}>
          Decline…
        </button>
      )}
      {aside !== "reply" && (
        <button type="button" onClick={() => setAside("reply")} disabled={busy}>
          Reply instead…
        </button>
      )}
    </>
  );
}

export function AsideForm({ aside, item, submission, onBack }: { aside: Aside; item: PendingItem; submission: Submission; onBack: () => void }) {
  if (aside === "decline") return <DeclineForm item={item} submission={submission} onBack={onBack} />;
  if (aside === "reply") return <ReplyForm item={item} submission={submission} onBack={onBack} />;
  return null;
}

/** A reply in prose instead of an answer: the model reads that the person replied, and what. */
function ReplyForm({ item, submission, onBack }: { item: PendingItem; submission: Submission; onBack: () => void }) {
  const [reply, setReply] = useState("");
  const id = `reply-${item.call.toolCallId}`;
  const violations = submission.violations.filter((v) => v.field.startsWith("answer.reply"));
  return (
    <form
      class="inline"
      onSubmit={(event) => {
        event.preventDefault();
        if (!submission.busy) void submission.submit({ reply });
      }}
    >
      <label for={id}>Your reply (the model reads it instead of an answer)</label>
      <textarea
        id={id}
        rows={3}
        value={reply}
        aria-invalid={violations.length > 0}
        aria-describedby={`${id}-errors`}
        onInput={(event) => setReply(event.currentTarget.value)}
        autoFocus
      />
      <Violations list={violations} id={`${id}-errors`} />
      <div class="actions">
        <button type="submit" class="primary" disabled={submission.busy}>
          Send reply
        </button>
        <button type="button" onClick={onBack}>
          Back
        </button>
      </div>
    </form>
  );
}

/** Decline with a reason: the model learns the person would not answer, and why. */
function DeclineForm({ item, submission, onBack }: { item: PendingItem; submission: Submission; onBack: () => void }) {
  const [reason, setReason] = useState("");
  const id = `decline-${item.call.toolCallId}`;
  return (
    <form
      class="inline"
      onSubmit={(event) => {
        event.preventDefault();
        void submission.submit({ decline: reason });
      }}
    >
      <label for={id}>Why decline? (optional)</label>
      <input id={id} value={reason} onInput={(event) => setReason(event.currentTarget.value)} autoFocus />
      <Violations list={submission.violations.filter((v) => v.field.startsWith("answer.decline"))} id={`${id}-errors`} />
      <div class="actions">
        <button type="submit" class="danger" disabled={submission.busy}>
          Decline
        </button>
        <button type="button" onClick={onBack}>
          Back
        </button>
      </div>
    </form>
  );
}

function ApprovalForm({ item, submission }: { item: PendingItem; submission: Submission }) {
  const { call } = item;
  const [mode, setMode] = useState<"view" | "reject" | "edit">("view");
  const [reason, setReason] = useState("");
  const [edited, setEdited] = useState(prettyJson(call.argumentsJson));
  const id = call.toolCallId;
  // The inbox's `a` and `r` keys, when this card is the one in its detail pane.
  useTriageActions(
    {
      approve: () => {
        if (!submission.busy) void submission.submit({ approve: true });
      },
      reject: () => setMode("reject"),
    },
    [submission.busy, id],
  );
  return (
    <>
      {call.approvalReason && (
        <div class="approval-reason">
          <span class="meta">Why it needs approval</span>
          <Markdown text={call.approvalReason} links />
        </div>
      )}
      {mode !== "edit" && (
        <pre class="arguments" aria-label="Arguments">
          {prettyJson(call.argumentsJson)}
        </pre>
      )}
      {mode === "view" && (
        <div class="actions">
          <button
            type="button"
            class="primary"
            disabled={submission.busy}
            onClick={() => void submission.submit({ approve: true })}
          >
            Approve
          </button>
          <button type="button" onClick={() => setMode("reject")} disabled={submission.busy}>
            Reject…
          </button>
          <button type="button" onClick={() => setMode("edit")} disabled={submission.busy}>
            Edit arguments…
          </button>
        </div>
      )}
      {mode === "reject" && (
        <form
          class="inline"
          onSubmit={(event) => {
            event.preventDefault();
            void submission.submit({ reject: reason });
          }}
        >
          <label for={`reject-${id}`}>Why reject? (the model reads it)</label>
          <input id={`reject-${id}`} value={reason} onInput={(event) => setReason(event.currentTarget.value)} autoFocus />
          <Violations list={submission.violations} id={`reject-errors-${id}`} />
          <div class="actions">
            <button type="submit" class="danger" disabled={submission.busy}>
              Reject
            </button>
            <button type="button" onClick={() => setMode("view")}>
              Back
            </button>
          </div>
        </form>
      )}
      {mode === "edit" && (
        <form
          class="inline"
          onSubmit={(event) => {
            event.preventDefault();
            void submission.submit({ edit: edited });
          }}
        >
          <label for={`edit-${id}`}>Arguments (JSON), run as edited</label>
          <textarea
            id={`edit-${id}`}
            class="code"
            rows={Math.min(16, edited.split("\n").length + 1)}
            value={edited}
            aria-invalid={submission.violations.length > 0}
            aria-describedby={`edit-errors-${id}`}
            onInput={(event) => setEdited(event.currentTarget.value)}
          />
          <Violations list={submission.violations} id={`edit-errors-${id}`} />
          <div class="actions">
            <button type="submit" class="primary" disabled={submission.busy}>
              Approve as edited
            </button>
            <button type="button" onClick={() => setMode("view")}>
              Back
            </button>
          </div>
        </form>
      )}
    </>
  );
}

/** A client tool call: run by the caller's worker, not a person; shown so the queue is complete. */
function WaitingForWorker({ item }: { item: PendingItem }) {
  const now = useNow();
  const { call } = item;
  const claimEnds = ms(call.claimExpireTime);
  return (
    <>
      <p class="status">
        {settledHere.get(callKey(item.runId, call.toolCallId)) === SuspendKind.APPROVAL && "Approved by you. "}
        Waiting for a worker
        {call.claimant && claimEnds !== undefined && claimEnds > now
          ? `: claimed by ${call.claimant}, ${countdown(claimEnds, now).replace("in ", "")} left`
          : " to run it"}
        .
      </p>
      <pre class="arguments" aria-label="Arguments">
        {prettyJson(call.argumentsJson)}
      </pre>
    </>
  );
}
