// Status: not built yet.
import type { ViewProps } from './view.js';

export function StatusView(_props: ViewProps) {
  return (
    <main>
      <h1>Status</h1>
    </main>
  );
}
