import { useEffect } from "preact/hooks";

/** Typing into a field: the page's letter keys are the field's, not shortcuts. */
const typing = (target: EventTarget | null) =>
  target instanceof HTMLElement &&
  (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));

/** `/` anywhere but in a field: focus the search box (the browser's quick find is not asked). */
export function useSlashFocuses(target: () => HTMLElement | null) {
  useEffect(() => {
    const pressed = (event: KeyboardEvent) => {
      if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
      event.preventDefault();
      target()?.focus();
    };
    addEventListener("keydown", pressed);
    return () => removeEventListener("keydown", pressed);
  }, [target]);
}

const SELECTED = "data-selected";

/**
 * `j`/`k` move a selection down and up the rows of the page's main list (the first table of `main`
 * whose rows hold a link), Enter opens the selected row's first link. The row is marked
 * (`data-selected`, `aria-current`) and scrolled into view; a list read again keeps the mark by its link.
 */
export function useListKeys() {
  useEffect(() => {
    let selectedHref: string | null = null;
    const rows = () =>
      [...document.querySelectorAll<HTMLTableRowElement>("main table tbody tr")].filter((r) => r.querySelector("a"));
    const hrefOf = (row: HTMLTableRowElement) => row.querySelector("a")?.getAttribute("href") ?? null;
    const pressed = (event: KeyboardEvent) => {
      if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
      if (!["j", "k", "Enter"].includes(event.key)) return;
      const list = rows();
      if (list.length === 0) return;
      const at = list.findIndex((r) => hrefOf(r) === selectedHref);
      if (event.key === "Enter") {
        // Enter on a link or button does what it does; only a selection with nothing focused opens.
        if (at < 0 || (event.target instanceof HTMLElement && event.target !== document.body)) return;
        event.preventDefault();
        list[at]?.querySelector("a")?.click();
        return;
      }
      const next = at < 0 ? 0 : Math.max(0, Math.min(list.length - 1, at + (event.key === "j" ? 1 : -1)));
      for (const row of list) {
        row.removeAttribute(SELECTED);
        row.removeAttribute("aria-current");
      }
      const row = list[next];
      if (!row) return;
      row.setAttribute(SELECTED, "true");
      row.setAttribute("aria-current", "true");
      row.scrollIntoView({ block: "nearest" });
      selectedHref = hrefOf(row);
    };
    addEventListener("keydown", pressed);
    return () => removeEventListener("keydown", pressed);
  }, []);
}
