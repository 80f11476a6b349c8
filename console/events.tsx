// Events: not built yet.
import type { ViewProps } from './view.js';

export function EventsView(_props: ViewProps) {
  return (
    <main>
      <h1>Events</h1>
    </main>
  );
}
