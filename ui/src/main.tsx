// The web inbox askuser serves at `/`: the pending list and each run's page, over gRPC-Web.
import { render } from "preact";
import { useState } from "preact/hooks";
import { AnswerPage } from "./answer";
import { AuthContext, KeyPrompt } from "./auth";
import { credential } from "./api";
import { Inbox } from "./inbox";
import { RunPage } from "./run";
import { Link, useRoute } from "./router";
import { ToastProvider } from "./toast";

function App() {
  const route = useRoute();
  const [generation, setGeneration] = useState(0);
  const [askingForKey, setAskingForKey] = useState(false);
  const auth = { generation, unauthenticated: () => setAskingForKey(true) };
  return (
    <AuthContext.Provider value={auth}>
      <ToastProvider>
      <header class="top">
        <Link href="/" class="brand">
          <img src="/assets/icon.svg" alt="" width={22} height={22} /> askuser inbox
        </Link>
        {credential.get() !== undefined && (
          <button
            type="button"
            class="link"
            onClick={() => {
              credential.clear();
              setAskingForKey(true);
            }}
          >
            Change key
          </button>
        )}
      </header>
      {route.page === "inbox" && <Inbox />}
      {route.page === "run" && <RunPage key={route.runId} runId={route.runId} />}
      {route.page === "answer" && <AnswerPage />}
      {route.page === "missing" && (
        <main>
          <p class="empty">No such page. <Link href="/">Go to the inbox</Link>.</p>
        </main>
      )}
      {askingForKey && (
        <KeyPrompt
          onSaved={() => {
            setAskingForKey(false);
            setGeneration(generation + 1);
          }}
        />
      )}
      </ToastProvider>
    </AuthContext.Provider>
  );
}

render(<App />, document.getElementById("app")!);
