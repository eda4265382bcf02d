// Asking for a key or token once per tab, when the server refuses a call without one.
import { createContext } from "preact";
import { useContext, useState } from "preact/hooks";
import { credential } from "./api";

/** What views need of the page's authentication. */
export interface Auth {
  /** Bumped when the credential changes: views restart their calls with it. */
  generation: number;
  /** A call was refused as unauthenticated: ask for a key. */
  unauthenticated: () => void;
}

export const AuthContext = createContext<Auth>({ generation: 0, unauthenticated: () => {} });

export const useAuth = () => useContext(AuthContext);

export function KeyPrompt({ onSaved }: { onSaved: () => void }) {
  const [value, setValue] = useState("");
  const hadOne = credential.get() !== undefined;
  return (
    <div class="overlay" role="dialog" aria-modal="true" aria-labelledby="key-title">
      <form
        class="key-prompt"
        onSubmit={(event) => {
          event.preventDefault();
          if (!value.trim()) return;
          credential.set(value.trim());
          onSaved();
        }}
      >
        <h2 id="key-title">{hadOne ? "That key was refused" : "This server needs a key"}</h2>
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
          onInput={(event) => setValue(event.currentTarget.value)}
        />
        <button type="submit" class="primary">
          Use this key
        </button>
      </form>
    </div>
  );
}
