// Sending one answer or decision with ResumeRun: the call stays on its card until the server takes
// it; a refusal keeps the card as it was, with the server's reasons on the fields.
import { useState } from "preact/hooks";
import { AskUserError, type AnswerValue, type SuspendKind, type Violation } from "../../clients/typescript/src/web/index";
import { client, describe, isUnauthenticated, newAnswerId } from "./api";
import { useAuth } from "./auth";
import { callKey, type PendingItem } from "./feed";
import { useToasts } from "./toast";
import { useTriage } from "./triage";

/**
 * Calls this tab settled, with the kind of wait it settled, so their cards say "by you" (an approval
 * given here is not the worker's output that settles the call later).
 */
export const settledHere = new Map<string, SuspendKind>();

/** How long the server has to take an answer before the page says it could not. */
const SUBMIT_TIMEOUT_MS = 30_000;

export interface Submission {
  busy: boolean;
  /** The server took the answer; the card waits for the feed to say the call is settled. */
  sent: boolean;
  error?: string;
  violations: Violation[];
  submit: (answer: AnswerValue) => Promise<void>;
}

export function useSubmission(item: PendingItem): Submission {
  const auth = useAuth();
  const toasts = useToasts();
  const triage = useTriage();
  const [state, setState] = useState<Omit<Submission, "submit">>({ busy: false, sent: false, violations: [] });
  const submit = async (answer: AnswerValue) => {
    setState({ busy: true, sent: false, violations: [] });
    const abort = new AbortController();
    const key = callKey(item.runId, item.call.toolCallId);
    settledHere.set(key, item.call.kind);
    const next = triage?.next(key);
    try {
      const frames = client.resumeRun(item.runId, item.call.toolCallId, answer, {
        answerId: newAnswerId(),
        signal: abort.signal,
        timeoutMs: SUBMIT_TIMEOUT_MS,
      });
      // The first frame acknowledges the answer; the run's events after it are the run page's.
      for await (const frame of frames) {
        if (frame.event.case === "answerAccepted") break;
      }
      setState({ busy: false, sent: true, violations: [] });
      toasts.notify(confirmation(item, answer));
      triage?.done(key, next);
    } catch (error) {
      settledHere.delete(key);
      if (isUnauthenticated(error)) auth.unauthenticated();
      const reason = error instanceof AskUserError ? error.reason : undefined;
      setState({
        busy: false,
        sent: false,
        violations: error instanceof AskUserError ? error.fieldViolations : [],
        error: reason ? `${describe(error)} (${reason})` : describe(error),
      });
    } finally {
      abort.abort();
    }
  };
  return { ...state, submit };
}

/** What the page says once the server took an answer: "Approved deploy (run 01a2…)", "Answer sent". */
export function confirmation(item: PendingItem, answer: AnswerValue): string {
  const run = `(run ${item.runId.slice(0, 8)}…)`;
  const tool = item.call.toolName;
  if ("approve" in answer) return `Approved ${tool} ${run}`;
  if ("reject" in answer) return `Rejected ${tool} ${run}`;
  if ("edit" in answer) return `Approved ${tool} as edited ${run}`;
  if ("decline" in answer) return `Declined ${run}`;
  if ("reply" in answer) return `Reply sent ${run}`;
  if ("toolOutput" in answer) return `Output sent ${run}`;
  if ("form" in answer) return `Answers sent ${run}`;
  return `Answer sent ${run}`;
}
