// Asking a person from any code (`HumanService.Ask`): the options of a request and the typed outcome
// of its call, in plain shapes with no transport in them (no grpc-js, no Connect, no Node built-ins).
// Where an option holds a message or an enum of the contract, the type is generic over it, because
// each entry has its own generated code.

import type { CallOptions } from "./options.js";

/** Who settled a request's call (an API key's name, a token's subject; `askuser` for an expiry). */
interface Settled {
  /** The subject of who settled it; `""` when nobody did. */
  settledBy: string;
  /** The call's result as its `tool_result` carried it (what a run's model would read). */
  content: string;
}

/** A value of a form's answer, as plain JSON: text, number, yes/no, or a choice field's selection. */
export type FormOutcomeValue = string | number | boolean | { values: string[]; other: string };

/** How a question or a form was settled. */
export type QuestionOutcome = Settled &
  (
    | { kind: "text"; text: string }
    | { kind: "selections"; selections: string[] }
    | { kind: "form"; values: Record<string, FormOutcomeValue> }
    | { kind: "declined"; reason: string }
    | { kind: "replied"; text: string }
    | { kind: "expired" }
    | { kind: "cancelled" }
  );

/**
 * How an approval was settled: `approved` and `edited` carry the arguments to run the tool with (the
 * asker's own, or the approver's edit); askuser never runs it.
 */
export type ApprovalOutcome = Settled &
  (
    | { kind: "approved"; arguments: Record<string, unknown> }
    | { kind: "edited"; arguments: Record<string, unknown> }
    | { kind: "rejected"; reason: string }
    | { kind: "expired" }
    | { kind: "cancelled" }
  );

/** The outcome of any request. */
export type HumanOutcome = QuestionOutcome | ApprovalOutcome;

/** What a request asks, whatever its call: the parts of `ask`'s options besides the call itself. */
export interface AskCommonOptions<WebhookSubscription> extends CallOptions {
  /** What is going on and why it is asked (markdown), shown with the call. */
  context?: string;
  /** Who may settle it: subjects, and groups as `group:NAME`; anyone with the scope to when absent. */
  assignees?: string[];
  /** How long it may wait, in milliseconds; until settled (capped by the server) when absent. */
  ttlMs?: number;
  /** Free-form labels kept with the request. */
  metadata?: Record<string, string>;
  /** Webhooks of this request, as a run's. */
  webhooks?: WebhookSubscription[];
  /**
   * Idempotency key (at most 256 bytes): an `ask` repeating the key of an earlier one follows that
   * request instead of making another. A random UUID when absent.
   */
  requestId?: string;
}

/** A question: free text, or offered options to select (one, or several with `SELECTION_MODE_MULTI_SELECT`). */
export interface AskQuestion<SelectionMode> {
  question: string;
  /** The offered options, as labels or `{ label, description }`; a free-text question when absent. */
  options?: (string | { label: string; description?: string })[];
  selectionMode?: SelectionMode;
  form?: never;
  approval?: never;
}

/** A form of typed fields (the entry's `Form` message, or a partial one where the entry takes that). */
export interface AskForm<Form> {
  form: Form;
  question?: never;
  approval?: never;
}

/** A tool call the asker wants approved, edited or rejected before it runs it. */
export interface ApprovalInit {
  /** The tool's name: letters, digits, `_` and `-`, at most 64 characters. */
  toolName: string;
  /** Its arguments: an object (sent as its JSON) or JSON text of an object. */
  arguments: Record<string, unknown> | string;
  /** Why approval is asked, shown to the approver. */
  reason?: string;
}

/** An approval asked with `ask`. */
export interface AskApproval {
  approval: ApprovalInit;
  question?: never;
  form?: never;
}

/** Which call a request makes. */
export type AskedKind = "question" | "form" | "approval";

/** The kind of call `init` asks; a TypeError when it asks several (none is left for the server to refuse). */
export function askedKind(init: { question?: unknown; form?: unknown; approval?: unknown }): AskedKind | undefined {
  const given = (["question", "form", "approval"] as const).filter((key) => init[key] !== undefined);
  if (given.length > 1) throw new TypeError(`a request asks one thing: question, form or approval, not ${given.join(" and ")}`);
  return given[0];
}

/** A new request id (a random UUID). */
export function newRequestId(): string {
  return globalThis.crypto.randomUUID();
}

/** An approval's arguments as the `arguments_json` the contract carries. */
export function argumentsJson(args: Record<string, unknown> | string): string {
  return typeof args === "string" ? args : JSON.stringify(args);
}

/** The one piece of an answer that settled a request's call, in a shape both entries map theirs to. */
export type SettledAnswer =
  | { case: "text"; value: string }
  | { case: "selections"; value: string[] }
  | { case: "decline"; value: string }
  | { case: "reply"; value: string }
  | { case: "form"; value: Record<string, FormOutcomeValue> }
  | { case: "approve" }
  | { case: "reject"; value: string }
  | { case: "edit"; value: string }
  | { case: "other" };

/**
 * The typed outcome of a settled call. `resultKind` is the name of its `ToolResultKind` without the
 * prefix (`EXPIRED`, `CANCELLED`, ...); `answer` what settled it (undefined when nothing did);
 * `askedArguments` the arguments an approval was asked with (JSON text).
 * @throws Error for a settlement that is none of a request's (e.g. a tool output).
 */
export function settledOutcome(
  asked: AskedKind,
  resultKind: string,
  answer: SettledAnswer | undefined,
  settled: Settled,
  askedArguments: string,
): HumanOutcome {
  if (resultKind === "EXPIRED") return { kind: "expired", ...settled };
  if (resultKind === "CANCELLED") return { kind: "cancelled", ...settled };
  const approval = asked === "approval";
  switch (answer?.case) {
    case "text":
      return { kind: "text", text: answer.value, ...settled };
    case "selections":
      return { kind: "selections", selections: answer.value, ...settled };
    case "form":
      return { kind: "form", values: answer.value, ...settled };
    case "reply":
      return { kind: "replied", text: answer.value, ...settled };
    case "decline":
      return approval ? { kind: "rejected", reason: answer.value, ...settled } : { kind: "declined", reason: answer.value, ...settled };
    case "reject":
      return { kind: "rejected", reason: answer.value, ...settled };
    case "approve":
      return { kind: "approved", arguments: resultArguments(settled.content) ?? parseObject(askedArguments), ...settled };
    case "edit":
      return { kind: "edited", arguments: resultArguments(settled.content) ?? parseObject(answer.value), ...settled };
  }
  throw new Error(`the request's call was settled in a way a request is not (${resultKind}): ${settled.content}`);
}

/** The `arguments` of an approval's result (`{"decision": ..., "arguments": {...}}`), if it is one. */
function resultArguments(content: string): Record<string, unknown> | undefined {
  try {
    const result: unknown = JSON.parse(content);
    if (result !== null && typeof result === "object" && "arguments" in result) {
      const args = (result as { arguments: unknown }).arguments;
      if (args !== null && typeof args === "object" && !Array.isArray(args)) return args as Record<string, unknown>;
    }
  } catch {
    // Not JSON: the arguments come from elsewhere.
  }
  return undefined;
}

function parseObject(json: string): Record<string, unknown> {
  const value: unknown = JSON.parse(json);
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
