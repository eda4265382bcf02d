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
 * single-select label), selected labels, or a decline. For a form (`SUSPEND_KIND_FORM`): its fields'
 * values, or a decline. For either, a reply in prose instead of an answer (the model is told the
 * person replied, and what they wrote). For a client tool call (`SUSPEND_KIND_CLIENT_TOOL`): the
 * tool's output. For an approval (`SUSPEND_KIND_APPROVAL`): approve, reject (with an optional reason;
 * a decline rejects too) or edit (the arguments to run the tool with, as JSON text or as an object,
 * which is sent as its JSON).
 */
export type AnswerValue =
  | { text: string }
  | { selections: string[] }
  | { decline: string }
  | { form: FormValues }
  | { reply: string }
  | { toolOutput: { content: string; isError?: boolean } }
  | { approve: true }
  | { reject: string }
  | { edit: string | Record<string, unknown> };

/**
 * One field's value in a form's answer, of the field's kind: a string for a text field, a number for
 * a number field, a boolean for a yes/no field; for a choice field, the selected choices' values as
 * an array (even for a single choice), or `{ values?, other? }` with the person's own text ("Other…")
 * where the field allows it.
 */
export type FormFieldValue = string | number | boolean | string[] | { values?: string[]; other?: string };

/** A form's answer: each field's value by the field's `name`; optional fields may be left out. */
export type FormValues = Record<string, FormFieldValue>;

/**
 * A field value as the `value` oneof of the contract's `FieldValue`, in protobuf-es's `{ case, value }`
 * shape (the Node entry renames `case` to ts-proto's `$case`).
 */
export type FieldValueCase =
  | { case: "text"; value: string }
  | { case: "number"; value: number }
  | { case: "boolean"; value: boolean }
  | { case: "choice"; value: { values: string[]; other: string } };

/**
 * Each field's value of `values` as the oneof of its `FieldValue`, by field name.
 * @throws TypeError for a value of none of the `FormFieldValue` shapes (e.g. `null`, an array with a
 * non-string, an object with another key): plain JavaScript callers get no compiler to catch it, and
 * the server would only see an empty value.
 */
export function fieldValueCases(values: FormValues): Record<string, FieldValueCase> {
  const cases: Record<string, FieldValueCase> = {};
  for (const [name, value] of Object.entries(values)) cases[name] = fieldValueCase(name, value);
  return cases;
}

function fieldValueCase(name: string, value: FormFieldValue): FieldValueCase {
  switch (typeof value) {
    case "string":
      return { case: "text", value };
    case "number":
      return { case: "number", value };
    case "boolean":
      return { case: "boolean", value };
  }
  if (Array.isArray(value)) return { case: "choice", value: { values: choiceValues(name, value), other: "" } };
  if (value !== null && typeof value === "object") {
    const unknown = Object.keys(value).filter((key) => key !== "values" && key !== "other");
    const { values = [], other = "" } = value;
    if (unknown.length === 0 && typeof other === "string") {
      return { case: "choice", value: { values: choiceValues(name, values), other } };
    }
  }
  throw new TypeError(
    `form field ${JSON.stringify(name)}: a value is a string, a number, a boolean, an array of choices or { values?, other? }, not ${JSON.stringify(value)}`,
  );
}

function choiceValues(name: string, values: unknown): string[] {
  if (!Array.isArray(values) || !values.every((item) => typeof item === "string")) {
    throw new TypeError(`form field ${JSON.stringify(name)}: the choices are an array of strings, not ${JSON.stringify(values)}`);
  }
  return values;
}

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
  /** Only standalone requests (`HumanService.Ask`: runs of no agent). */
  requestsOnly?: boolean;
}

/** The input of the `ask_user` tool. */
export interface AskUserInput<SelectionMode> {
  question: string;
  options?: { label: string; description?: string }[];
  selectionMode?: SelectionMode;
}
