// Three pages, routed in the browser: the inbox at `/`, a run at `/runs/<run_id>` (and
// `#<tool_call_id>` for one of its calls), and an answer link's call at `/answer#<token>`. The
// server answers every one of these paths with the same page.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

export type Route = { page: "inbox" } | { page: "run"; runId: string } | { page: "answer" } | { page: "missing" };

export function route(path: string): Route {
  if (path === "/") return { page: "inbox" };
  if (path === "/answer") return { page: "answer" };
  const run = /^\/runs\/([^/]+)$/.exec(path);
  return run ? { page: "run", runId: decodeURIComponent(run[1]) } : { page: "missing" };
}

export function useRoute(): Route {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const update = () => setPath(location.pathname);
    addEventListener("popstate", update);
    return () => removeEventListener("popstate", update);
  }, []);
  return route(path);
}

export const runPath = (runId: string, toolCallId?: string) =>
  `/runs/${encodeURIComponent(runId)}${toolCallId ? `#${encodeURIComponent(toolCallId)}` : ""}`;

/** A link that changes page without reloading it (a modified click opens a tab as usual). */
export function Link({ href, children, class: className }: { href: string; children: ComponentChildren; class?: string }) {
  return (
    <a
      href={href}
      class={className}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        history.pushState(null, "", href);
        dispatchEvent(new PopStateEvent("popstate"));
      }}
    >
      {children}
    </a>
  );
}

/** The current time, refreshed every `periodMs` (for countdowns and "just now"). */
export function useNow(periodMs = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), periodMs);
    return () => clearInterval(timer);
  }, [periodMs]);
  return now;
}
