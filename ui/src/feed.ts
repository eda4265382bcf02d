// The pending list, live: WatchPendingCalls' snapshot, then its changes; reconnected after any
// failure (a restart, a proxy's timeout), when the new snapshot replaces what was shown.
import { useEffect, useState } from "preact/hooks";
import type { PendingToolCall, SettledBy, SuspendKind, ToolResultKind } from "../../clients/typescript/src/web/index";
import { client, describe, isAbort, isUnauthenticated, sleep } from "./api";
import { useAuth } from "./auth";
import { ms } from "./format";

/** A call waiting for someone. */
export interface PendingItem {
  runId: string;
  agentId: string;
  call: PendingToolCall;
}

/** A call that stopped waiting while shown: its card says how, then goes. */
export interface SettledItem extends PendingItem {
  kind: ToolResultKind;
  settledBy?: SettledBy;
  at: number;
}

export interface FeedFilter {
  agentId: string;
  kind: SuspendKind | undefined;
  assignedToMe: boolean;
}

export interface Feed {
  /** Waiting calls, most urgent first (see `urgency`). */
  pending: PendingItem[];
  /** Calls settled in the last moments, by key. */
  settled: Map<string, SettledItem>;
  connection: "connecting" | "live" | "reconnecting";
  error?: string;
}

/** How long a settled card stays to say who settled it. */
const SETTLED_SHOWN_MS = 15_000;
const RETRY_MS = [500, 1000, 2000, 5000];

export const callKey = (runId: string, toolCallId: string) => `${runId}/${toolCallId}`;

export function usePendingFeed(filter: FeedFilter): Feed {
  const auth = useAuth();
  const [feed, setFeed] = useState<Feed>({ pending: [], settled: new Map(), connection: "connecting" });
  useEffect(() => {
    const abort = new AbortController();
    const shown = new Map<string, PendingItem>();
    const settled = new Map<string, SettledItem>();
    const publish = (connection: Feed["connection"], error?: string) =>
      setFeed({ pending: ordered(shown), settled: new Map(settled), connection, error });
    const settle = (key: string, item: SettledItem) => {
      settled.set(key, item);
      setTimeout(() => {
        if (settled.get(key) === item) {
          settled.delete(key);
          publish("live");
        }
      }, SETTLED_SHOWN_MS);
    };
    (async () => {
      for (let attempt = 0; !abort.signal.aborted; attempt++) {
        // The snapshot of this connection, shown once complete so a reconnect does not flicker.
        let snapshot: Map<string, PendingItem> | undefined = new Map();
        try {
          const stream = client.watchPendingCalls(
            {
              agentIds: filter.agentId ? [filter.agentId] : [],
              kinds: filter.kind !== undefined ? [filter.kind] : [],
              assignedToMe: filter.assignedToMe,
              signal: abort.signal,
            },
          );
          for await (const response of stream) {
            const event = response.event;
            if (event.case === "callPending" && event.value.call) {
              const item = { runId: event.value.runId, agentId: event.value.agentId, call: event.value.call };
              const key = callKey(item.runId, item.call.toolCallId);
              (snapshot ?? shown).set(key, item);
              if (!snapshot) publish("live");
            } else if (event.case === "snapshotDone" && snapshot) {
              shown.clear();
              snapshot.forEach((item, key) => shown.set(key, item));
              snapshot = undefined;
              attempt = 0;
              publish("live");
            } else if (event.case === "callSettled") {
              const key = callKey(event.value.runId, event.value.toolCallId);
              const item = (snapshot ?? shown).get(key);
              (snapshot ?? shown).delete(key);
              if (item && !snapshot) {
                settle(key, { ...item, kind: event.value.kind, settledBy: event.value.settledBy, at: Date.now() });
                publish("live");
              }
            }
          }
        } catch (error) {
          if (isAbort(error, abort.signal)) return;
          if (isUnauthenticated(error)) return auth.unauthenticated();
          publish("reconnecting", describe(error));
        }
        await sleep(RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)], abort.signal);
      }
    })();
    return () => abort.abort();
  }, [filter.agentId, filter.kind, filter.assignedToMe, auth.generation]);
  return feed;
}

/**
 * By urgency: the call expiring soonest first (a call without an expiry after every one with), then
 * the one waiting longest; ties in the order the runs made them (run ids are UUIDv7, ordered by time).
 */
function ordered(shown: Map<string, PendingItem>): PendingItem[] {
  const position = new Map([...shown.keys()].map((key, index) => [key, index]));
  return [...shown.entries()].sort(([a, x], [b, y]) => urgency(x, y) || position.get(a)! - position.get(b)!).map(([, item]) => item);
}

/** Negative when `x` is more urgent than `y`. */
export function urgency(x: PendingItem, y: PendingItem): number {
  const expiresX = ms(x.call.expireTime) ?? Infinity;
  const expiresY = ms(y.call.expireTime) ?? Infinity;
  if (expiresX !== expiresY) return expiresX < expiresY ? -1 : 1;
  const waitingX = ms(x.call.suspendTime) ?? Infinity;
  const waitingY = ms(y.call.suspendTime) ?? Infinity;
  if (waitingX !== waitingY) return waitingX < waitingY ? -1 : 1;
  return x.runId === y.runId ? 0 : x.runId < y.runId ? -1 : 1;
}
