import { useEffect, useState } from "preact/hooks";

/** Whether the tab is in view: a list read again for a person looking at it stops while nobody is. */
export function useVisible(): boolean {
  const [visible, setVisible] = useState(() => !document.hidden);
  useEffect(() => {
    const changed = () => setVisible(!document.hidden);
    document.addEventListener("visibilitychange", changed);
    return () => document.removeEventListener("visibilitychange", changed);
  }, []);
  return visible;
}
