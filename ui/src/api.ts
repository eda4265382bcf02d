// The page's one client of the server it was served by, and the credential it sends: kept per tab
// (sessionStorage), asked for once when the server says a call needs one.
import { AskUserError, AskUserWebClient, Code } from "../../clients/typescript/src/web/index";

const CREDENTIAL_KEY = "askuser.credential";

export const credential = {
  get: (): string | undefined => sessionStorage.getItem(CREDENTIAL_KEY) ?? undefined,
  set: (value: string) => sessionStorage.setItem(CREDENTIAL_KEY, value),
  clear: () => sessionStorage.removeItem(CREDENTIAL_KEY),
};

/**
 * The answer link this tab opened (`/answer#<token>`), if any: sent instead of the tab's key, kept
 * in memory only (never stored), as it opens one call once.
 */
let answerLink: string | undefined;
export const setAnswerLink = (token: string | undefined) => {
  answerLink = token;
};

export const client = new AskUserWebClient(location.origin, { tokenProvider: () => answerLink ?? credential.get() });

/** Whether `error` means the call needs a (different) key or token. */
export function isUnauthenticated(error: unknown): boolean {
  return error instanceof AskUserError && error.code === Code.Unauthenticated;
}

/** Whether `error` is the page's own abort (navigation, a changed filter), not a failure. */
export function isAbort(error: unknown, signal: AbortSignal): boolean {
  return signal.aborted || (error instanceof AskUserError && error.code === Code.Canceled);
}

/** One line for a failed call: the server's message without the code prefix. */
export function describe(error: unknown): string {
  if (error instanceof AskUserError) return error.details || Code[error.code];
  return error instanceof Error ? error.message : String(error);
}

/** An answer id, so a retried submit is recognised; random bytes work on plain-http origins too. */
export function newAnswerId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return "web-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Waits `ms` unless `signal` aborts first. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
