// How the inbox's keyboard reaches the call shown in its detail pane: the approval card there
// registers what `a` and `r` do, and each action sent from the pane moves the selection on.
import { createContext } from "preact";
import { useContext, useLayoutEffect } from "preact/hooks";

export interface TriageActions {
  approve: () => void;
  reject: () => void;
}

export interface Triage {
  /** The detail pane's card says what `a` and `r` do (undefined when it can do neither). */
  register: (actions: TriageActions | undefined) => void;
  /** The call to show once `key` is settled (taken when an action on it starts, as the list is then). */
  next: (key: string) => string | undefined;
  /** The server took an action on `key`: show `next` (unless another call was chosen meanwhile). */
  done: (key: string, next: string | undefined) => void;
}

export const TriageContext = createContext<Triage | undefined>(undefined);

export const useTriage = () => useContext(TriageContext);

/**
 * Registers `actions` with the inbox's keyboard while the card is shown (outside the inbox, nothing),
 * in the same commit that draws the card: a key pressed as soon as the card shows acts on it (with
 * an effect after paint, an `a` pressed in between did nothing).
 */
export function useTriageActions(actions: TriageActions | undefined, deps: unknown[]) {
  const triage = useTriage();
  useLayoutEffect(() => {
    if (!triage) return;
    triage.register(actions);
    return () => triage.register(undefined);
  }, [triage, ...deps]);
}
