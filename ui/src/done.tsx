// The "Done" view: calls settled lately (who, when, the answer), searchable. The newest runs from
// ListRuns (a page at a time), then GetRun for each, whose settled calls carry the result the model
// got (`content`) and the answer as the person typed it (`answer`).
import { useEffect, useRef, useState } from "preact/hooks";
import { SuspendKind, type Run, type SettledToolCall } from "../../clients/typescript/src/web/index";
import { client, describe, isAbort, isUnauthenticated } from "./api";
import { useAuth } from "./auth";
import { agentLabel, ago, answerText, ms, settledVerb, settlerName } from "./format";
import { askedIn } from "./asked";
import { plainLine } from "./markdown";
import { Link, runPath, useNow } from "./router";
import { settledHere } from "./submit";
import { callKey } from "./feed";

const PAGE_SIZE = 25;
/** GetRun calls in flight at once. */
const PARALLEL = 4;

export interface DoneItem {
  run: Run;
  call: SettledToolCall;
  at: number;
  /** What it asked (the question, the form's title), from the run's events. */
  asked?: string;
}

interface DoneState {
  items: DoneItem[];
  loading: boolean;
  nextPageToken: string;
  error?: string;
}

export function DoneView({ search }: { search: string }) {
  const { state, more } = useDone();
  const now = useNow(10_000);
  const words = search.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = state.items.filter((item) => words.every((word) => haystack(item).includes(word)));
  return (
    <section class="done" aria-label="Done">
      {state.error && (
        <p class="error" role="alert">
          {state.error}
        </p>
      )}
      {!state.loading && state.items.length === 0 && !state.error && <p class="empty">Nothing settled yet.</p>}
      {state.items.length > 0 && shown.length === 0 && <p class="empty">Nothing settled matches “{search}”.</p>}
      <ul class="rows done-rows">
        {shown.map((item) => (
          <DoneRow key={`${item.run.runId}/${item.call.toolCallId}`} item={item} now={now} />
        ))}
      </ul>
      <p class="more">
        {state.loading ? (
          <span class="status">Loading…</span>
        ) : (
          state.nextPageToken && (
            <button type="button" onClick={more}>
              Load older runs
            </button>
          )
        )}
      </p>
    </section>
  );
}

function DoneRow({ item, now }: { item: DoneItem; now: number }) {
  const { run, call } = item;
  const answer = answerText(call.answer) ?? call.content;
  return (
    <li class="row done-row" data-call={call.toolCallId} data-run={run.runId}>
      <p class="row-title">
        <span class={`badge verb-${settledVerb(call.kind).split(" ")[0]}`}>{settledVerb(call.kind)}</span>{" "}
        <span class="title">{callName(item)}</span>
      </p>
      <p class="meta">
        {agentLabel(run.agentId)} · {who(item) && <><span class="who">by {who(item)}</span> · </>}
        <time dateTime={new Date(item.at).toISOString()} title={new Date(item.at).toLocaleString()}>
          {ago(item.at, now)}
        </time>{" "}
        · <Link href={runPath(run.runId, call.toolCallId)}>run {run.runId.slice(-8)}</Link>
      </p>
      {answer && <p class="answer">{answer}</p>}
    </li>
  );
}

/** What it asked; for a tool call, the tool and the run's prompt (a request's context). */
function callName({ run, call, asked }: DoneItem): string {
  if (asked && asked !== call.toolName) return asked;
  const about = plainLine(run.prompt);
  return about ? `${call.toolName}: ${about}` : call.toolName;
}

/** Who settled it; undefined when nobody did (an expiry says "expired", a call that went on at its tool). */
function who({ run, call }: DoneItem): string | undefined {
  const here = settledHere.get(callKey(run.runId, call.toolCallId));
  const name = settlerName(call.settledBy);
  if (here !== undefined && here !== SuspendKind.CLIENT_TOOL && call.settledBy?.subject) return `you (${call.settledBy.subject})`;
  return name;
}

function haystack(item: DoneItem): string {
  const { run, call } = item;
  return [
    agentLabel(run.agentId),
    item.asked ?? "",
    run.prompt,
    call.toolName,
    settledVerb(call.kind),
    settlerName(call.settledBy) ?? "",
    answerText(call.answer) ?? "",
    call.content,
    run.runId,
  ]
    .join("\n")
    .toLowerCase();
}

function useDone() {
  const auth = useAuth();
  const [state, setState] = useState<DoneState>({ items: [], loading: true, nextPageToken: "" });
  const abortRef = useRef<AbortController>();
  const load = async (pageToken: string, items: DoneItem[]) => {
    const abort = abortRef.current!;
    setState({ items, loading: true, nextPageToken: "" });
    try {
      const page = await client.listRuns({ pageSize: PAGE_SIZE, pageToken, signal: abort.signal, timeoutMs: 10_000 });
      const found: DoneItem[] = [];
      let next = 0;
      const worker = async () => {
        while (next < page.runs.length) {
          const run = await client.getRun(page.runs[next++].runId, { signal: abort.signal, timeoutMs: 10_000 });
          // Only calls that waited for someone: a question, a form, an approval, a client tool.
          const settled = run.settledToolCalls.filter((call) => call.suspendTime);
          if (settled.length === 0) continue;
          const asked = await askedIn(run, abort.signal);
          for (const call of settled) found.push({ run, call, at: ms(call.settleTime) ?? 0, asked: asked.get(call.toolCallId) });
        }
      };
      await Promise.all(Array.from({ length: PARALLEL }, worker));
      const all = [...items, ...found].sort((a, b) => b.at - a.at);
      if (!abort.signal.aborted) setState({ items: all, loading: false, nextPageToken: page.nextPageToken });
    } catch (error) {
      if (isAbort(error, abort.signal)) return;
      if (isUnauthenticated(error)) return auth.unauthenticated();
      setState({ items, loading: false, nextPageToken: pageToken, error: describe(error) });
    }
  };
  useEffect(() => {
    const abort = new AbortController();
    abortRef.current = abort;
    void load("", []);
    return () => abort.abort();
  }, [auth.generation]);
  return { state, more: () => void load(state.nextPageToken, state.items) };
}
