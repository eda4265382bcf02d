// Confirmations after an action ("Approved deploy (run 01a2…)", "Answer sent"): a short note at the
// bottom of the page that fades, announced to screen readers, so an action never passes silently.
import { createContext, type ComponentChildren } from "preact";
import { useContext, useRef, useState } from "preact/hooks";

export interface Toasts {
  notify: (text: string, tone?: "ok" | "error") => void;
}

export const ToastContext = createContext<Toasts>({ notify: () => {} });

export const useToasts = () => useContext(ToastContext);

/** How long a note stays (its last second is the fade, in app.css). */
const SHOWN_MS = 5000;

interface Toast {
  id: number;
  text: string;
  tone: "ok" | "error";
}

export function ToastProvider({ children }: { children: ComponentChildren }) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const next = useRef(0);
  const notify = (text: string, tone: "ok" | "error" = "ok") => {
    const toast = { id: next.current++, text, tone };
    setToasts((shown) => [...shown.slice(-2), toast]);
    setTimeout(() => setToasts((shown) => shown.filter((t) => t !== toast)), SHOWN_MS);
  };
  const [value] = useState<Toasts>(() => ({ notify: (text, tone) => notifyRef.current(text, tone) }));
  const notifyRef = useRef(notify);
  notifyRef.current = notify;
  return (
    <ToastContext.Provider value={value}>
      {children}
      <div class="toasts" role="status" aria-live="polite">
        {toasts.map((toast) => (
          <p key={toast.id} class={`toast ${toast.tone}`}>
            {toast.text}
          </p>
        ))}
      </div>
    </ToastContext.Provider>
  );
}
