// How values of the contract read on a page.
import {
  AuthMethod,
  SuspendKind,
  ToolResultKind,
  timestampMs,
  type Answer,
  type SettledBy,
  type Timestamp,
} from "../../clients/typescript/src/web/index";

/** Milliseconds since the epoch of a message's timestamp, if set. */
export const ms = (time: Timestamp | undefined): number | undefined => (time ? timestampMs(time) : undefined);

/** "in 4m 05s" / "expired": what is left until `deadline`. */
export function countdown(deadline: number, now: number): string {
  const left = Math.max(0, Math.round((deadline - now) / 1000));
  if (left === 0) return "expired";
  const h = Math.floor(left / 3600);
  const m = Math.floor((left % 3600) / 60);
  const s = left % 60;
  const two = (n: number) => String(n).padStart(2, "0");
  return h > 0 ? `in ${h}h ${two(m)}m` : m > 0 ? `in ${m}m ${two(s)}s` : `in ${s}s`;
}

/** "just now", "3 min ago", or the time of day. */
export function ago(when: number, now: number): string {
  const seconds = Math.round((now - when) / 1000);
  if (seconds < 45) return "just now";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  return new Date(when).toLocaleString();
}

export const KIND_NAMES: Record<SuspendKind, string> = {
  [SuspendKind.UNSPECIFIED]: "call",
  [SuspendKind.QUESTION]: "question",
  [SuspendKind.APPROVAL]: "approval",
  [SuspendKind.CLIENT_TOOL]: "client tool",
  [SuspendKind.FORM]: "form",
};

/** What happened to a call, as a past participle: "answered", "rejected", … */
export function settledVerb(kind: ToolResultKind): string {
  switch (kind) {
    case ToolResultKind.ANSWERED:
      return "answered";
    case ToolResultKind.DECLINED:
      return "declined";
    case ToolResultKind.EXPIRED:
      return "expired";
    case ToolResultKind.CANCELLED:
      return "cancelled";
    case ToolResultKind.INVALID_CALL:
      return "refused as an invalid call";
    case ToolResultKind.OUTPUT:
      return "given its output";
    case ToolResultKind.EXECUTED:
      return "approved and run";
    case ToolResultKind.REJECTED:
      return "rejected";
    case ToolResultKind.REPLIED:
      return "replied to";
    default:
      return "settled";
  }
}

/** Who settled a call, for "answered by …"; undefined when nobody did (expiry, cancellation). */
export function settlerName(by: SettledBy | undefined): string | undefined {
  if (!by) return undefined;
  if (by.method === AuthMethod.SERVER) return "the server";
  if (by.method === AuthMethod.NONE || !by.subject) return "someone (no authentication)";
  return by.subject;
}

/** JSON text indented for reading; the text itself when it is not JSON. */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** "12s", "4m", "2h", "3d": how long something has waited, for a dense row. */
export function age(since: number, now: number): string {
  const seconds = Math.max(0, Math.floor((now - since) / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

/** Who a run belongs to: its agent, or "request" for a run made by `Ask` (no agent). */
export const agentLabel = (agentId: string): string => agentId || "request";

/** An answer or decision as a person reads it: the text, the choices, "approved", … */
export function answerText(answer: Answer | undefined): string | undefined {
  const value = answer?.answer;
  switch (value?.case) {
    case "text":
      return value.value;
    case "selections":
      return value.value.labels.length > 0 ? value.value.labels.join(", ") : "(none of these)";
    case "decline":
      return value.value.reason ? `declined: ${value.value.reason}` : "declined";
    case "reply":
      return `replied: ${value.value}`;
    case "toolOutput":
      return value.value.content;
    case "approval": {
      const decision = value.value.decision;
      if (decision.case === "approve") return "approved";
      if (decision.case === "reject") return decision.value.reason ? `rejected: ${decision.value.reason}` : "rejected";
      if (decision.case === "edit") return `approved as edited: ${decision.value.argumentsJson}`;
      return undefined;
    }
    case "form": {
      const values = Object.entries(value.value.values).map(([name, field]) => {
        const v = field.value;
        const shown =
          v.case === "choice"
            ? [...v.value.values, ...(v.value.other ? [v.value.other] : [])].join(", ")
            : v.case === undefined
              ? ""
              : String(v.value);
        return `${name}: ${shown}`;
      });
      return values.length > 0 ? values.join("; ") : "accepted";
    }
    default:
      return undefined;
  }
}
