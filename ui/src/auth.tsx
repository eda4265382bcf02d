// Asking for a key or token once per tab, when the server refuses a call without one. The dialog
// tries the key before it closes: a key the server refuses (UNAUTHENTICATED) or that may not read
// runs (PERMISSION_DENIED) keeps the dialog open, saying so.
import { createContext } from "preact";
import { useContext, useState } from "preact/hooks";
import { AskUserError, Code } from "../../clients/typescript/src/web/index";
import { client, credential, describe } from "./api";

/** What views need of the page's authentication. */
export interface Auth {
  /** Bumped when the credential changes: views restart their calls with it. */
  generation: number;
  /** A call was refused as unauthenticated: ask for a key. */
  unauthenticated: () => void;
}

export const AuthContext = createContext<Auth>({ generation: 0, unauthenticated: () => {} });

export const useAuth = () => useContext(AuthContext);

/** Why the server refused a key, in a sentence; undefined when it took it. */
export function refusal(error: unknown): string {
  if (error instanceof AskUserError && error.code === Code.Unauthenticated) {
    return `The server refused this key (UNAUTHENTICATED): ${describe(error)}. Check it was copied whole, or make a new one.`;
  }
  if (error instanceof AskUserError && error.code === Code.PermissionDenied) {
    return `The server knows this key, but it may not do this (PERMISSION_DENIED): ${describe(error)}. The inbox needs runs:read, and runs:answer to answer.`;
  }
  return `Could not check the key: ${describe(error)}`;
}

export function KeyPrompt({ onSaved }: { onSaved: () => void }) {
  const [value, setValue] = useState("");
  const [checking, setChecking] = useState(false);
  const [error, setError] = useState<string | undefined>(
    credential.get() !== undefined ? "The server refused the key this tab had. Paste another." : undefined,
  );
  const save = async () => {
    const key = value.trim();
    if (!key || checking) return;
    setChecking(true);
    credential.set(key);
    try {
      // The inbox's first call, made with the new key: the list of runs needs runs:read.
      await client.listRuns({ pageSize: 1, timeoutMs: 10_000 });
      onSaved();
    } catch (refused) {
      credential.clear();
      setError(refusal(refused));
      setChecking(false);
    }
  };
  return (
    <div class="overlay" role="dialog" aria-modal="true" aria-labelledby="key-title">
      <form
        class="key-prompt"
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
      >
        <h2 id="key-title">{error ? "That key was refused" : "This server needs a key"}</h2>
        <p>
          Paste an API key or token. It is kept in this tab only and sent with each call as{" "}
          <code>authorization: Bearer …</code>.
        </p>
        <label for="credential">API key or token</label>
        <input
          id="credential"
          type="password"
          autocomplete="off"
          autoFocus
          value={value}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? "credential-error" : undefined}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
        {error && (
          <p class="error" id="credential-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={checking}>
          {checking ? "Checking…" : "Use this key"}
        </button>
      </form>
    </div>
  );
}
