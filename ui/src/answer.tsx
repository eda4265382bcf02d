// An answer link's page (`/answer#<token>`): the one call a webhook's link was made for, answerable
// without a key. The token (after `#`, so no server or proxy ever logs it) is the page's only
// credential: it reads the call's run and settles the call once. Once the call no longer waits
// (answered here or elsewhere) the server refuses the link, and the page says so.
import { useEffect, useState } from "preact/hooks";
import { AskUserError, Code, type Run } from "../../clients/typescript/src/web/index";
import { client, describe, isAbort, setAnswerLink, sleep } from "./api";
import { AuthContext } from "./auth";
import { CallCard } from "./card";
import { callKey } from "./feed";
import { RunContext } from "./inbox";
import { settledHere } from "./submit";

/** What the link's token says of itself (the server checks it; the page only reads it). */
interface LinkClaims {
  runId: string;
  toolCallId: string;
  assignee?: string;
  expireMs: number;
}

/** The claims of `token` (`al1.<base64url JSON>.<tag>`), or undefined when it is not a link token. */
export function linkClaims(token: string): LinkClaims | undefined {
  const [prefix, claims] = token.split(".");
  if (prefix !== "al1" || !claims) return undefined;
  try {
    const json = JSON.parse(atob(claims.replaceAll("-", "+").replaceAll("_", "/")));
    if (typeof json.r !== "string" || typeof json.c !== "string") return undefined;
    return { runId: json.r, toolCallId: json.c, assignee: json.a, expireMs: Number(json.e) };
  } catch {
    return undefined;
  }
}

type State =
  | { kind: "loading" }
  | { kind: "open"; run: Run }
  | { kind: "closed"; why: string; done: boolean };

/** How often the page checks whether its call still waits (answered elsewhere, expired). */
const RECHECK_MS = 3000;

/** Why the server refused the link, in a sentence for the person who clicked it. */
function refusal(error: unknown): { why: string; done: boolean } {
  const reason = error instanceof AskUserError ? error.reason : undefined;
  switch (reason) {
    case "ANSWER_LINK_USED":
      return { why: "This call no longer waits: it has been answered, here or elsewhere. The link opens nothing more.", done: true };
    case "ANSWER_LINK_EXPIRED":
      return { why: "This link has expired. Ask for a new one, or answer in the inbox.", done: false };
    case "ANSWER_LINK_INVALID":
      return { why: "This link is not valid: it may have been cut short when it was copied. Open it from its message again.", done: false };
  }
  if (error instanceof AskUserError && error.code === Code.NotFound) {
    return { why: "This call's run no longer exists.", done: false };
  }
  return { why: `The server refused this link: ${describe(error)}`, done: false };
}

export function AnswerPage() {
  const token = decodeURIComponent(location.hash.slice(1));
  const claims = linkClaims(token);
  const [state, setState] = useState<State>({ kind: "loading" });
  const [refresh, setRefresh] = useState(0);
  useEffect(() => {
    document.title = "Answer · askuser";
    setAnswerLink(claims ? token : undefined);
    return () => setAnswerLink(undefined);
  }, [token]);
  useEffect(() => {
    if (!claims) return;
    const abort = new AbortController();
    (async () => {
      while (!abort.signal.aborted) {
        try {
          const run = await client.getRun(claims.runId, { signal: abort.signal, timeoutMs: 10_000 });
          setState({ kind: "open", run });
        } catch (error) {
          if (isAbort(error, abort.signal)) return;
          setState({ kind: "closed", ...refusal(error) });
          return;
        }
        await sleep(RECHECK_MS, abort.signal);
      }
    })();
    return () => abort.abort();
  }, [token, refresh]);

  if (!claims) {
    return (
      <main class="answer">
        <p class="error" role="alert">
          This page opens a call from an answer link (<code>/answer#…</code>), and this address has none. Open the link
          from its message again.
        </p>
      </main>
    );
  }
  const call = state.kind === "open" ? state.run.pendingToolCalls.find((c) => c.toolCallId === claims.toolCallId) : undefined;
  const answeredHere = settledHere.has(callKey(claims.runId, claims.toolCallId));
  return (
    // A refused link never asks for a key: the page says why instead.
    <AuthContext.Provider value={{ generation: refresh, unauthenticated: () => setRefresh(refresh + 1) }}>
      <main class="answer">
        <h2>{claims.assignee ? `Asked of ${claims.assignee.replace(/^group:/, "the group ")}` : "Your answer is asked for"}</h2>
        <p class="meta">
          A link for this one call: it works once, until {new Date(claims.expireMs).toLocaleString()}.
        </p>
        {state.kind === "loading" && <p class="status">Opening the call…</p>}
        {state.kind === "closed" && (
          <p class={state.done ? "status done" : "error"} role={state.done ? "status" : "alert"} data-link-closed>
            {state.done && answeredHere ? "Thank you: your answer is recorded. You can close this page." : state.why}
          </p>
        )}
        {state.kind === "open" && call && (
          <>
            <RunContext runId={claims.runId} agentId={state.run.agentId} refresh={0} />
            <CallCard item={{ runId: claims.runId, agentId: state.run.agentId, call }} showRun={false} />
          </>
        )}
      </main>
    </AuthContext.Provider>
  );
}
