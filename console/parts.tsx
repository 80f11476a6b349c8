// Pieces several views share: the page of a view the token's scopes do not open, and a destructive action asked
// twice.
import type { ComponentChildren } from 'preact';

/** A view this token may not use: its title and why, and nothing to do. */
export function NotAllowed({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <main>
      <h1>{title}</h1>
      <p>{children}</p>
    </main>
  );
}

/** The second question of a destructive action: a group named `label`, the question, then `yes` or Cancel. */
export function Confirm(props: { label: string; question: ComponentChildren; yes: string; onYes: () => void; onCancel: () => void }) {
  return (
    <div role="group" aria-label={props.label} class="actions">
      <span>{props.question}</span>
      <button type="button" onClick={props.onYes}>
        {props.yes}
      </button>
      <button type="button" onClick={props.onCancel}>
        Cancel
      </button>
    </div>
  );
}
