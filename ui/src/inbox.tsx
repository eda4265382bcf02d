// The inbox: a dense list of every call waiting for someone (most urgent first, counted by kind,
// filtered by agent, kind, "assigned to me" and text) beside the selected call's detail (the run's
// prompt, what it settled so far, then the question, form or approval). Triaged from the keyboard:
// j / k move, Enter opens, a approves, r rejects, / filters, Esc goes back. "Done" lists what was
// settled lately.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { SuspendKind, type Agent, type Run } from "../../clients/typescript/src/web/index";
import { client, describe, isAbort, isUnauthenticated } from "./api";
import { useAuth } from "./auth";
import { CallCard, SettledCard, callTitle } from "./card";
import { askedIn } from "./asked";
import { DoneView } from "./done";
import { callKey, usePendingFeed, type FeedFilter, type PendingItem, type SettledItem } from "./feed";
import { age, agentLabel, ago, answerText, countdown, KIND_NAMES, ms, settledVerb, settlerName } from "./format";
import { Markdown, plainLine } from "./markdown";
import { useNow } from "./router";
import { TriageContext, type Triage, type TriageActions } from "./triage";

const KINDS = [SuspendKind.QUESTION, SuspendKind.FORM, SuspendKind.APPROVAL, SuspendKind.CLIENT_TOOL];

const keyOf = (item: PendingItem) => callKey(item.runId, item.call.toolCallId);

export function Inbox() {
  const [view, setView] = useState<"waiting" | "done">("waiting");
  const [filter, setFilter] = useState<FeedFilter>({ agentId: "", kind: undefined, assignedToMe: false });
  const [kind, setKind] = useState<SuspendKind | undefined>(undefined);
  const [search, setSearch] = useState("");
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const [opened, setOpened] = useState(false);
  const [focusDetail, setFocusDetail] = useState(0);
  const feed = usePendingFeed(filter);
  const agents = useAgents();
  const now = useNow();
  const searchRef = useRef<HTMLInputElement>(null);
  const detailRef = useRef<HTMLElement>(null);
  const listRef = useRef<HTMLUListElement>(null);

  const count = feed.pending.length;
  useEffect(() => {
    document.title = count > 0 ? `(${count}) askuser inbox` : "askuser inbox";
  }, [count]);

  const counts = new Map<SuspendKind, number>(KINDS.map((k) => [k, 0]));
  for (const item of feed.pending) counts.set(item.call.kind, (counts.get(item.call.kind) ?? 0) + 1);
  const words = search.toLowerCase().split(/\s+/).filter(Boolean);
  const rows = feed.pending.filter(
    (item) => (kind === undefined || item.call.kind === kind) && words.every((word) => rowText(item).includes(word)),
  );

  // The selection: a waiting call, or one settled elsewhere while shown (it says by whom); else the first.
  const selectedItem: PendingItem | SettledItem | undefined =
    (selected !== undefined && (rows.find((item) => keyOf(item) === selected) ?? feed.settled.get(selected))) || undefined;
  useEffect(() => {
    if (!selectedItem && rows.length > 0) setSelected(keyOf(rows[0]));
  }, [selectedItem, rows.length > 0 ? keyOf(rows[0]) : ""]);

  // What the keyboard handler reads, current at each key.
  const current = useRef({ rows, selected, view, opened });
  current.current = { rows, selected, view, opened };
  const actions = useRef<TriageActions | undefined>(undefined);
  const triage = useMemo<Triage>(
    () => ({
      register: (registered) => {
        actions.current = registered;
      },
      next: (key) => {
        const list = current.current.rows;
        const at = list.findIndex((item) => keyOf(item) === key);
        const next = at < 0 ? undefined : (list[at + 1] ?? list[at - 1]);
        return next && keyOf(next);
      },
      done: (key, next) => {
        if (current.current.selected !== key) return;
        setSelected(next);
        if (next === undefined) setOpened(false);
      },
    }),
    [],
  );

  const move = (step: number) => {
    const { rows, selected } = current.current;
    if (rows.length === 0) return;
    const at = rows.findIndex((item) => keyOf(item) === selected);
    const next = rows[Math.max(0, Math.min(rows.length - 1, at < 0 ? 0 : at + step))];
    setSelected(keyOf(next));
    const line = listRef.current?.querySelector<HTMLElement>(`[data-row="${CSS.escape(next.call.toolCallId)}"]`);
    line?.scrollIntoView({ block: "nearest" });
    // The focus follows when it was on the list, so Enter opens what is selected.
    if (document.activeElement?.classList.contains("row")) line?.focus();
  };

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
      if (document.querySelector(".overlay")) return;
      const target = event.target as HTMLElement | null;
      if (isTyping(target)) {
        if (event.key === "Escape" && target === searchRef.current) target!.blur();
        return;
      }
      const { view } = current.current;
      if (event.key === "/") {
        event.preventDefault();
        searchRef.current?.focus();
        return;
      }
      if (view !== "waiting") return;
      const inDetail = detailRef.current?.contains(target) ?? false;
      switch (event.key) {
        case "j":
        case "ArrowDown":
          if (event.key === "ArrowDown" && target && target.tagName !== "BODY" && !target.classList.contains("row")) return;
          event.preventDefault();
          move(1);
          break;
        case "k":
        case "ArrowUp":
          if (event.key === "ArrowUp" && target && target.tagName !== "BODY" && !target.classList.contains("row")) return;
          event.preventDefault();
          move(-1);
          break;
        case "Enter":
          // On a button or a link of the detail, Enter is that control's own.
          if (inDetail || (target && target.tagName !== "BODY" && !target.classList.contains("row"))) return;
          event.preventDefault();
          if (target?.classList.contains("row")) setSelected(callKey(target.dataset.run ?? "", target.dataset.row ?? ""));
          setOpened(true);
          setFocusDetail((n) => n + 1);
          break;
        case "a":
          if (!actions.current) return;
          event.preventDefault();
          actions.current.approve();
          break;
        case "r":
          if (!actions.current) return;
          event.preventDefault();
          setOpened(true);
          actions.current.reject();
          break;
        case "Escape":
          setOpened(false);
          if (inDetail) {
            const row = listRef.current?.querySelector<HTMLElement>('[aria-current="true"]');
            if (row) row.focus();
            else (target as HTMLElement).blur();
          }
          break;
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);

  // Enter: the first control of the opened call takes the focus.
  useEffect(() => {
    if (focusDetail === 0) return;
    const control = detailRef.current?.querySelector<HTMLElement>(
      "article textarea, article input:not([type=hidden]):not([disabled]), article select, article button.primary:not([disabled]), article button:not([disabled])",
    );
    control?.focus();
  }, [focusDetail]);

  return (
    <main class={`inbox${opened ? " opened" : ""}`}>
      <div class="toolbar">
        <div class="tabs" role="tablist" aria-label="Views">
          <button type="button" role="tab" aria-selected={view === "waiting"} onClick={() => setView("waiting")}>
            Waiting <span class="count">{count}</span>
          </button>
          <button type="button" role="tab" aria-selected={view === "done"} onClick={() => setView("done")}>
            Done
          </button>
        </div>
        <input
          ref={searchRef}
          id="search"
          type="search"
          class="search"
          placeholder={view === "waiting" ? "Filter  ( / )" : "Search what was settled  ( / )"}
          aria-label={view === "waiting" ? "Filter" : "Search done"}
          value={search}
          onInput={(event) => setSearch(event.currentTarget.value)}
        />
        <p class={`connection ${feed.connection}`} role="status" aria-live="polite">
          {feed.connection === "live"
            ? `${count} waiting · live`
            : feed.connection === "connecting"
              ? "connecting…"
              : `reconnecting… (${feed.error ?? "connection lost"})`}
        </p>
      </div>
      {view === "waiting" && (
        <form class="filters" aria-label="Filters" onSubmit={(event) => event.preventDefault()}>
          <div class="kinds" role="group" aria-label="Kind">
            <button type="button" aria-pressed={kind === undefined} onClick={() => setKind(undefined)}>
              all <span class="count">{count}</span>
            </button>
            {KINDS.map((k) => (
              <button key={k} type="button" data-kind={KIND_NAMES[k]} aria-pressed={kind === k} onClick={() => setKind(kind === k ? undefined : k)}>
                {KIND_NAMES[k]} <span class="count">{counts.get(k)}</span>
              </button>
            ))}
          </div>
          <label>
            <span class="visually-hidden">Agent</span>
            <select
              aria-label="Agent"
              value={filter.agentId}
              onChange={(event) => setFilter({ ...filter, agentId: event.currentTarget.value })}
            >
              <option value="">All agents</option>
              {agents.map((agent) => (
                <option key={agent.agentId} value={agent.agentId}>
                  {agent.name || agent.agentId}
                </option>
              ))}
            </select>
          </label>
          <label class="check">
            <input
              type="checkbox"
              checked={filter.assignedToMe}
              onChange={(event) => setFilter({ ...filter, assignedToMe: event.currentTarget.checked })}
            />
            Assigned to me
          </label>
        </form>
      )}
      {view === "done" && <DoneView search={search} />}
      {view === "waiting" && (
        <TriageContext.Provider value={triage}>
          <div class={`triage${opened ? " opened" : ""}`}>
            <section class="list" aria-label="Waiting calls">
              {rows.length === 0 && feed.connection === "live" && (
                <p class="empty">
                  {count === 0
                    ? "Nothing is waiting. Questions and approvals appear here as agents ask for them."
                    : "Nothing waiting matches the filter."}
                </p>
              )}
              <ul class="rows" ref={listRef}>
                {rows.map((item) => {
                  const key = keyOf(item);
                  return (
                    <li key={key}>
                      <Row
                        item={item}
                        now={now}
                        selected={key === selected}
                        onOpen={() => {
                          setSelected(key);
                          setOpened(true);
                        }}
                      />
                    </li>
                  );
                })}
              </ul>
              {rows.length > 0 && (
                <p class="keys" aria-hidden="true">
                  <kbd>j</kbd> <kbd>k</kbd> move · <kbd>Enter</kbd> open · <kbd>a</kbd> approve · <kbd>r</kbd> reject ·{" "}
                  <kbd>/</kbd> filter · <kbd>Esc</kbd> back
                </p>
              )}
            </section>
            <section class="detail" aria-label="Selected call" ref={detailRef}>
              {selectedItem && (
                <>
                  <button type="button" class="link back" onClick={() => setOpened(false)}>
                    ← All waiting calls
                  </button>
                  <RunContext
                    runId={selectedItem.runId}
                    agentId={selectedItem.agentId}
                    refresh={feed.pending.filter((item) => item.runId === selectedItem.runId).length}
                  />
                  {"at" in selectedItem ? (
                    <SettledCard key={`settled-${keyOf(selectedItem)}`} item={selectedItem as SettledItem} />
                  ) : (
                    <CallCard key={`${keyOf(selectedItem)}-${selectedItem.call.kind}`} item={selectedItem} />
                  )}
                </>
              )}
            </section>
          </div>
        </TriageContext.Provider>
      )}
    </main>
  );
}

/** One waiting call in a line or two: kind, agent, the question or tool, age, expiry, assignees. */
function Row({ item, now, selected, onOpen }: { item: PendingItem; now: number; selected: boolean; onOpen: () => void }) {
  const { call } = item;
  const since = ms(call.suspendTime);
  const expires = ms(call.expireTime);
  const soon = expires !== undefined && expires - now < 5 * 60_000;
  return (
    <button
      type="button"
      class={`row kind-${KIND_NAMES[call.kind].replace(" ", "-")}`}
      data-row={call.toolCallId}
      data-run={item.runId}
      aria-current={selected ? "true" : undefined}
      onClick={onOpen}
    >
      <span class="row-title">
        <span class="badge">{KIND_NAMES[call.kind]}</span> <span class="title">{rowTitle(item)}</span>
      </span>
      <span class="row-meta">
        <span class="agent">{agentLabel(item.agentId)}</span>
        {since !== undefined && <span class="age"> · {age(since, now)}</span>}
        {expires !== undefined && <span class={`expires${soon ? " soon" : ""}`}> · expires {countdown(expires, now)}</span>}
        {call.assignees.length > 0 && <span class="assignees"> · for {call.assignees.join(", ")}</span>}
      </span>
    </button>
  );
}

function rowTitle({ call }: PendingItem): string {
  if (call.kind === SuspendKind.QUESTION || call.kind === SuspendKind.FORM) return plainLine(callTitle(call));
  if (call.kind === SuspendKind.APPROVAL) return `Approve ${call.toolName}`;
  return `${call.toolName} (client tool)`;
}

function rowText(item: PendingItem): string {
  const { call } = item;
  return [rowTitle(item), callTitle(call), agentLabel(item.agentId), call.toolName, KIND_NAMES[call.kind], call.assignees.join(" "), item.runId]
    .join("\n")
    .toLowerCase();
}

/** The run's prompt (a request's context) and what it settled so far, from GetRun. */
export function RunContext({ runId, agentId, refresh }: { runId: string; agentId: string; refresh: number }) {
  const auth = useAuth();
  const now = useNow(10_000);
  const [run, setRun] = useState<Run | undefined>(undefined);
  const [asked, setAsked] = useState<Map<string, string>>(new Map());
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    const abort = new AbortController();
    client
      .getRun(runId, { signal: abort.signal, timeoutMs: 10_000 })
      .then(async (run) => {
        setRun(run);
        setError(undefined);
        if (run.settledToolCalls.some((call) => call.suspendTime)) {
          const titles = await askedIn(run, abort.signal);
          if (!abort.signal.aborted) setAsked(titles);
        }
      })
      .catch((error) => {
        if (isAbort(error, abort.signal)) return;
        if (isUnauthenticated(error)) return auth.unauthenticated();
        setError(describe(error));
      });
    return () => abort.abort();
  }, [runId, refresh, auth.generation]);
  const shown = run?.runId === runId ? run : undefined;
  const settled = shown?.settledToolCalls.filter((call) => call.suspendTime) ?? [];
  return (
    <div class="run-context" data-run={runId}>
      {error && <p class="error">{error}</p>}
      {shown?.prompt && (
        <div class="prompt">
          <p class="label">{agentId ? `Prompt · ${agentId}` : "Context · request"}</p>
          <Markdown text={shown.prompt} links />
        </div>
      )}
      {settled.length > 0 && (
        <div class="so-far">
          <p class="label">So far in this run</p>
          <ol>
            {settled.map((call) => {
              const who = settlerName(call.settledBy);
              const at = ms(call.settleTime);
              const answer = answerText(call.answer) ?? call.content;
              return (
                <li key={call.toolCallId}>
                  {asked.get(call.toolCallId) && asked.get(call.toolCallId) !== call.toolName ? (
                    <strong>{asked.get(call.toolCallId)}</strong>
                  ) : (
                    <code>{call.toolName}</code>
                  )}{" "}
                  {settledVerb(call.kind)}
                  {who ? ` by ${who}` : ""}
                  {at !== undefined ? ` · ${ago(at, now)}` : ""}
                  {answer && <span class="answer"> — {answer}</span>}
                </li>
              );
            })}
          </ol>
        </div>
      )}
    </div>
  );
}

/** Whether keys typed at `target` are text (an input, a text area, a select, an editable element). */
function isTyping(target: HTMLElement | null): boolean {
  if (!target) return false;
  if (target.isContentEditable || target.tagName === "TEXTAREA" || target.tagName === "SELECT") return true;
  if (target.tagName !== "INPUT") return false;
  const type = (target as HTMLInputElement).type;
  return !["checkbox", "radio", "button", "submit", "reset"].includes(type);
}

/** The agents this caller may see, for the filter. */
function useAgents(): Agent[] {
  const auth = useAuth();
  const [agents, setAgents] = useState<Agent[]>([]);
  useEffect(() => {
    const abort = new AbortController();
    client
      .listAgents({ signal: abort.signal, timeoutMs: 10_000 })
      .then(setAgents)
      .catch((error) => {
        if (isUnauthenticated(error)) auth.unauthenticated();
      });
    return () => abort.abort();
  }, [auth.generation]);
  return agents;
}
