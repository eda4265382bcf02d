// A run's page: its timeline from WatchRun (prompt, text as it streams, tool calls, questions and
// who answered them, results, the end), with its waiting calls answerable in place. Each call has
// an anchor (`#<tool_call_id>`) for notifications to point at.
import { useEffect, useRef, useState } from "preact/hooks";
import {
  PendingToolCallSchema,
  RunStatus,
  create,
  type RunAgentResponse,
  type ToolCallSuspended,
  type ToolResult,
} from "../../clients/typescript/src/web/index";
import { client, describe, isAbort, isUnauthenticated, sleep } from "./api";
import { useAuth } from "./auth";
import { CallCard, callTitle } from "./card";
import { ago, KIND_NAMES, ms, prettyJson, settledVerb, settlerName } from "./format";
import { Markdown, plainLine } from "./markdown";
import { Link, useNow } from "./router";

type Entry =
  | { type: "prompt"; agentId: string; prompt: string; at?: number }
  | { type: "text"; text: string }
  | { type: "call"; toolCallId: string; toolName: string; argumentsJson: string }
  | { type: "suspended"; event: ToolCallSuspended; result?: ToolResult; at?: number }
  | { type: "result"; result: ToolResult; at?: number }
  | { type: "note"; text: string; tone: "info" | "error" }
  | { type: "end"; status: RunStatus; text: string };

interface Timeline {
  agentId: string;
  entries: Entry[];
  status: RunStatus;
  lastSequence: bigint;
}

const STATUS_NAMES: Record<RunStatus, string> = {
  [RunStatus.UNSPECIFIED]: "unknown",
  [RunStatus.RUNNING]: "running",
  [RunStatus.SUSPENDED]: "waiting for an answer",
  [RunStatus.COMPLETED]: "completed",
  [RunStatus.FAILED]: "failed",
  [RunStatus.CANCELLED]: "cancelled",
};

const ENDED = [RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED];

export function RunPage({ runId }: { runId: string }) {
  const { timeline, error, following } = useTimeline(runId);
  useEffect(() => {
    document.title = `Run ${runId.slice(-8)} · askuser`;
  }, [runId]);
  useScrollToHash(timeline.entries.length);
  const waiting = timeline.entries.filter((e) => e.type === "suspended" && !e.result).length;
  const status = waiting > 0 && !ENDED.includes(timeline.status) ? RunStatus.SUSPENDED : timeline.status;
  return (
    <main class="run">
      <p>
        <Link href="/">← Inbox</Link>
      </p>
      <h2>
        Run <code>{runId}</code>
      </h2>
      <p class="meta">
        {timeline.agentId && <>agent {timeline.agentId} · </>}
        <span class={`run-status status-${STATUS_NAMES[status].split(" ")[0]}`} data-status={STATUS_NAMES[status]}>
          {STATUS_NAMES[status]}
        </span>
        {following && !ENDED.includes(status) && " · live"}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <ol class="timeline">
        {timeline.entries.map((entry, index) => (
          <TimelineEntry key={index} entry={entry} runId={runId} agentId={timeline.agentId} />
        ))}
      </ol>
    </main>
  );
}

function TimelineEntry({ entry, runId, agentId }: { entry: Entry; runId: string; agentId: string }) {
  const now = useNow(10_000);
  switch (entry.type) {
    case "prompt":
      return (
        <li class="entry prompt">
          <span class="who">Prompt</span>
          {entry.prompt ? <Markdown text={entry.prompt} links /> : <p><em>(none)</em></p>}
        </li>
      );
    case "text":
      return (
        <li class="entry text">
          <span class="who">Agent</span>
          <p>{entry.text}</p>
        </li>
      );
    case "call":
      return (
        <li class="entry call" id={`call-${entry.toolCallId}`}>
          <span class="who">Tool call</span>
          <p>
            <code>{entry.toolName}</code>
          </p>
          <pre class="arguments">{prettyJson(entry.argumentsJson)}</pre>
        </li>
      );
    case "suspended": {
      const { event, result } = entry;
      if (!result) {
        const call = create(PendingToolCallSchema, {
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          suspendPayload: event.suspendPayload,
          expireTime: event.expireTime,
          kind: event.kind,
          argumentsJson: event.argumentsJson,
          approvalReason: event.approvalReason,
          assignees: event.assignees,
          form: event.form,
        });
        return (
          <li class="entry waiting" id={event.toolCallId}>
            <CallCard item={{ runId, agentId, call }} showRun={false} />
          </li>
        );
      }
      const who = settlerName(result.settledBy);
      return (
        <li class="entry settled-call" id={event.toolCallId}>
          <span class="who">{KIND_NAMES[event.kind]}</span>
          <p>
            <strong>{plainLine(callTitle(event))}</strong>: {settledVerb(result.kind)}
            {who ? ` by ${who}` : ""}
            {entry.at !== undefined ? ` · ${ago(entry.at, now)}` : ""}
          </p>
          <pre class="result">{result.content}</pre>
        </li>
      );
    }
    case "result":
      return (
        <li class={`entry result${entry.result.isError ? " is-error" : ""}`}>
          <span class="who">Result of {entry.result.toolCallId.slice(-8)}</span>
          <pre class="result">{entry.result.content}</pre>
        </li>
      );
    case "note":
      return <li class={`entry note ${entry.tone}`}>{entry.text}</li>;
    case "end":
      return (
        <li class={`entry end status-${STATUS_NAMES[entry.status]}`} data-end={STATUS_NAMES[entry.status]}>
          <span class="who">Run {STATUS_NAMES[entry.status]}</span>
          {entry.text && <p>{entry.text}</p>}
        </li>
      );
  }
}

/** The run's events from the start, followed live, resumed after the last one seen on a failure. */
function useTimeline(runId: string) {
  const auth = useAuth();
  const [state, setState] = useState<{ timeline: Timeline; error?: string; following: boolean }>({
    timeline: { agentId: "", entries: [], status: RunStatus.UNSPECIFIED, lastSequence: 0n },
    following: false,
  });
  useEffect(() => {
    const abort = new AbortController();
    const timeline: Timeline = { agentId: "", entries: [], status: RunStatus.UNSPECIFIED, lastSequence: 0n };
    const publish = (following: boolean, error?: string) =>
      setState({ timeline: { ...timeline, entries: [...timeline.entries] }, following, error });
    (async () => {
      while (!abort.signal.aborted) {
        try {
          const run = await client.getRun(runId, { signal: abort.signal, timeoutMs: 10_000 });
          timeline.agentId = run.agentId;
          if (timeline.entries.length === 0) timeline.status = run.status;
          publish(true);
          const stream = client.watchRun(runId, Number(timeline.lastSequence), { signal: abort.signal });
          for await (const frame of stream) {
            if (apply(timeline, frame)) publish(true);
          }
          if (ENDED.includes(timeline.status)) return publish(false);
        } catch (error) {
          if (isAbort(error, abort.signal)) return;
          if (isUnauthenticated(error)) return auth.unauthenticated();
          publish(false, `${describe(error)}; retrying…`);
        }
        await sleep(2000, abort.signal);
      }
    })();
    return () => abort.abort();
  }, [runId, auth.generation]);
  return state;
}

/** Adds one event to the timeline; false when it changes nothing shown. */
function apply(timeline: Timeline, frame: RunAgentResponse): boolean {
  if (frame.sequence > 0n) timeline.lastSequence = frame.sequence;
  const at = ms(frame.time);
  const entries = timeline.entries;
  const event = frame.event;
  switch (event.case) {
    case "runStarted":
      timeline.agentId = event.value.agentId;
      timeline.status = RunStatus.RUNNING;
      entries.push({ type: "prompt", agentId: event.value.agentId, prompt: event.value.prompt, at });
      return true;
    case "textDelta": {
      const last = entries[entries.length - 1];
      if (last?.type === "text") last.text += event.value.text;
      else entries.push({ type: "text", text: event.value.text });
      return true;
    }
    case "toolCall":
      entries.push({ type: "call", ...event.value });
      return true;
    case "toolCallSuspended": {
      // It takes the place of the call's own entry, or of its earlier suspension (an approved call
      // now waiting for a worker).
      const id = event.value.toolCallId;
      const earlier = entries.findIndex(
        (e) => (e.type === "call" && e.toolCallId === id) || (e.type === "suspended" && e.event.toolCallId === id && !e.result),
      );
      const entry: Entry = { type: "suspended", event: event.value, at };
      if (earlier >= 0) entries[earlier] = entry;
      else entries.push(entry);
      return true;
    }
    case "toolResult": {
      const suspended = entries.find((e) => e.type === "suspended" && e.event.toolCallId === event.value.toolCallId && !e.result);
      if (suspended && suspended.type === "suspended") {
        suspended.result = event.value;
        suspended.at = at;
      } else entries.push({ type: "result", result: event.value, at });
      return true;
    }
    case "stepRestarted":
      entries.push({ type: "note", tone: "info", text: `Step restarted (attempt ${event.value.attempt}): ${event.value.reason}` });
      return true;
    case "runCompleted":
      timeline.status = RunStatus.COMPLETED;
      // The output is the text already streamed, unless the model sent none as it went.
      entries.push({
        type: "end",
        status: RunStatus.COMPLETED,
        text: entries.some((e) => e.type === "text") ? "" : event.value.outputText,
      });
      return true;
    case "runFailed":
      timeline.status = RunStatus.FAILED;
      entries.push({ type: "end", status: RunStatus.FAILED, text: event.value.message });
      return true;
    case "runCancelled":
      timeline.status = RunStatus.CANCELLED;
      entries.push({ type: "end", status: RunStatus.CANCELLED, text: event.value.reason });
      return true;
    default:
      return false;
  }
}

/** Brings `#<tool_call_id>` into view once the timeline has drawn it. */
function useScrollToHash(drawn: number) {
  const done = useRef(false);
  useEffect(() => {
    if (done.current || !location.hash) return;
    const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (!target) return;
    done.current = true;
    target.classList.add("targeted");
    target.scrollIntoView({ block: "center" });
  }, [drawn]);
}
