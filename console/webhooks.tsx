// Webhooks: not built yet.
import type { ViewProps } from './view.js';

export function WebhooksView(_props: ViewProps) {
  return (
    <main>
      <h1>Webhooks</h1>
    </main>
  );
}
