/** @jsxImportSource preact */

/** A failure to show where it happened, announced to screen readers; nothing when there is none. */
export function Alert(props: { message: string | null | undefined }) {
  if (!props.message) return null;
  return (
    <p class="error" role="alert">
      {props.message}
    </p>
  );
}
