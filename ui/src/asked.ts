// What each call of a run asked (its question, form title or tool), read from the run's events:
// WatchRun from the start until it has caught up with the run's last event. GetRun's settled calls
// say who settled them and how, but not what they asked.
import type { Run } from "../../clients/typescript/src/web/index";
import { client } from "./api";
import { callTitle } from "./card";
import { plainLine } from "./markdown";

/** The one-line title of each call of `run` that waited for someone, by tool call id. */
export async function askedIn(run: Run, signal: AbortSignal): Promise<Map<string, string>> {
  const asked = new Map<string, string>();
  if (run.lastSequence === 0n) return asked;
  const caughtUp = new AbortController();
  const stop = () => caughtUp.abort();
  signal.addEventListener("abort", stop);
  const timer = setTimeout(stop, 10_000);
  try {
    for await (const frame of client.watchRun(run.runId, 0, { signal: caughtUp.signal })) {
      const event = frame.event;
      // An approved call waits again for a worker: its first suspension says what was asked.
      if (event.case === "toolCallSuspended" && !asked.has(event.value.toolCallId)) {
        asked.set(event.value.toolCallId, plainLine(callTitle(event.value)));
      }
      if (frame.sequence >= run.lastSequence) break;
    }
  } catch {
    // What was read so far is what there is: the titles are a nicety, the list stands without them.
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", stop);
    caughtUp.abort();
  }
  return asked;
}
