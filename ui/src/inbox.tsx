// The inbox: every call waiting for someone, live, filtered by agent, kind and "assigned to me".
import { useEffect, useState } from "preact/hooks";
import { SuspendKind, type Agent } from "../../clients/typescript/src/web/index";
import { client, isUnauthenticated } from "./api";
import { useAuth } from "./auth";
import { CallCard, SettledCard } from "./card";
import { callKey, usePendingFeed, type FeedFilter, type PendingItem, type SettledItem } from "./feed";
import { KIND_NAMES } from "./format";

const KINDS = [SuspendKind.QUESTION, SuspendKind.FORM, SuspendKind.APPROVAL, SuspendKind.CLIENT_TOOL];

export function Inbox() {
  const [filter, setFilter] = useState<FeedFilter>({ agentId: "", kind: undefined, assignedToMe: false });
  const feed = usePendingFeed(filter);
  const agents = useAgents();
  const count = feed.pending.length;
  useEffect(() => {
    document.title = count > 0 ? `(${count}) askuser inbox` : "askuser inbox";
  }, [count]);
  const cards: (PendingItem | SettledItem)[] = [...feed.pending, ...feed.settled.values()].sort((a, b) =>
    a.runId === b.runId ? 0 : a.runId < b.runId ? 1 : -1,
  );
  return (
    <main>
      <form class="filters" aria-label="Filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Agent
          <select value={filter.agentId} onChange={(event) => setFilter({ ...filter, agentId: event.currentTarget.value })}>
            <option value="">All agents</option>
            {agents.map((agent) => (
              <option key={agent.agentId} value={agent.agentId}>
                {agent.name || agent.agentId}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind
          <select
            value={filter.kind ?? ""}
            onChange={(event) => {
              const value = event.currentTarget.value;
              setFilter({ ...filter, kind: value === "" ? undefined : (Number(value) as SuspendKind) });
            }}
          >
            <option value="">All kinds</option>
            {KINDS.map((kind) => (
              <option key={kind} value={kind}>
                {KIND_NAMES[kind]}
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
        <p class={`connection ${feed.connection}`} role="status" aria-live="polite">
          {feed.connection === "live"
            ? `${count} waiting · live`
            : feed.connection === "connecting"
              ? "connecting…"
              : `reconnecting… (${feed.error ?? "connection lost"})`}
        </p>
      </form>
      {cards.length === 0 && feed.connection === "live" && (
        <p class="empty">Nothing is waiting. Questions and approvals appear here as agents ask for them.</p>
      )}
      <section class="cards" aria-label="Waiting calls">
        {cards.map((item) =>
          "at" in item ? (
            <SettledCard key={`settled-${callKey(item.runId, item.call.toolCallId)}`} item={item} />
          ) : (
            <CallCard key={`${callKey(item.runId, item.call.toolCallId)}-${item.call.kind}`} item={item} />
          ),
        )}
      </section>
    </main>
  );
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
