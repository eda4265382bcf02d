// The options and answers both entries take: plain shapes with no transport in them (no grpc-js, no
// Connect, no Node built-ins). Where an option holds an enum of the contract, the type is generic
// over it, because each entry has its own generated enums (see README.md, "In the browser").

/**
 * Options every call takes (the shape of connect-es's `CallOptions`), as the last argument of each
 * method of the client, or merged into the method's own options object where it has one.
 */
export interface CallOptions {
  /**
   * How long the call may take, in milliseconds, streams included (a `startRun` waiting for an
   * answer counts); past it the call fails with `DEADLINE_EXCEEDED`. No deadline when absent or
   * `<= 0`, as in connect-es.
   */
  timeoutMs?: number;
  /**
   * Cancels the call when aborted: a pending promise rejects, and a stream being iterated throws, an
   * `AskUserError` with code `CANCELLED` (`codeName` `"CANCELLED"`). A signal already aborted cancels
   * the call at once.
   */
  signal?: AbortSignal;
  /**
   * Request headers (gRPC metadata) of this call, e.g. `{ "x-request-id": "..." }` or an
   * `authorization` header instead of the client's `apiKey`. Keys are lower-cased by gRPC; a value of
   * a key ending in `-bin` is sent as the bytes of its UTF-8 text.
   */
  headers?: Record<string, string>;
}

/** A token for one call: returned as it is, or as a promise (e.g. a JWT refreshed when it nears expiry). */
export type TokenProvider = () => string | Promise<string>;

/**
 * How a pending call is settled. For a question (`SUSPEND_KIND_QUESTION`): free text (or a
 * single-select label), selected labels, or a decline. For a client tool call
 * (`SUSPEND_KIND_CLIENT_TOOL`): the tool's output. For an approval (`SUSPEND_KIND_APPROVAL`): approve,
 * reject (with an optional reason; a decline rejects too) or edit (the arguments to run the tool with,
 * as JSON text or as an object, which is sent as its JSON).
 */
export type AnswerValue =
  | { text: string }
  | { selections: string[] }
  | { decline: string }
  | { toolOutput: { content: string; isError?: boolean } }
  | { approve: true }
  | { reject: string }
  | { edit: string | Record<string, unknown> };

/** The argument of an approval's edit, as the `arguments_json` the contract carries. */
export function editedArguments(edit: string | Record<string, unknown>): string {
  return typeof edit === "string" ? edit : JSON.stringify(edit);
}

/** Options of `resumeRun`. */
export interface ResumeRunOptions extends CallOptions {
  /** Idempotency key: a retry with the same key is acknowledged as a duplicate, not rejected. */
  answerId?: string;
}

/** Options of `claimCall`. */
export interface ClaimCallOptions extends CallOptions {
  /** How long the claim lasts unless renewed, in milliseconds (1 s to 1 h); the server's default (60 s) when absent. */
  ttlMs?: number;
}

/**
 * Filters of `watchPendingCalls`, which combine with AND (an absent or empty one matches everything),
 * and the options of the call.
 */
export interface WatchPendingCallsFilters<SuspendKind> extends CallOptions {
  /** Only calls of runs of these agents. */
  agentIds?: string[];
  /** Only calls of these tools. */
  toolNames?: string[];
  /** Only calls waiting for these kinds of settlement (`SuspendKind`), e.g. client tool calls only. */
  kinds?: SuspendKind[];
  /** Only calls whose assignees name the caller (its subject, or one of its groups). */
  assignedToMe?: boolean;
}

/** Filters and paging of `listRuns`, and the options of the call. */
export interface ListRunsFilters<RunStatus, SuspendKind> extends CallOptions {
  /** Only runs in this status. */
  status?: RunStatus;
  /** Only runs of this agent. */
  agentId?: string;
  /** Runs per page, 1 to 1000; the server's default (50) when absent. */
  pageSize?: number;
  /** The `nextPageToken` of the previous page. */
  pageToken?: string;
  /** Only runs whose metadata has every one of these entries, with exactly these values. */
  metadata?: Record<string, string>;
  /** Only runs created at or after this time. */
  createdAfter?: Date;
  /** Only runs created before this time. */
  createdBefore?: Date;
  /** Only runs with a call waiting for this kind of settlement. */
  pendingKind?: SuspendKind;
}

/** The input of the `ask_user` tool. */
export interface AskUserInput<SelectionMode> {
  question: string;
  options?: { label: string; description?: string }[];
  selectionMode?: SelectionMode;
}
