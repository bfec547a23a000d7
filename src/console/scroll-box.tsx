/** @jsxImportSource preact */
import type { ComponentChildren } from "preact";

/**
 * A wide table's box, scrolled by itself on a phone. It takes the keyboard's focus (and is named for
 * it), so the part out of view can be reached without a pointer (axe: scrollable-region-focusable).
 */
export function ScrollBox(props: { label: string; children: ComponentChildren }) {
  return (
    // A section with a name is a region landmark.
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable to be scrolled by keyboard
    <section class="scroll" aria-label={props.label} tabIndex={0}>
      {props.children}
    </section>
  );
}
