// Tokens: not built yet.
import type { ViewProps } from './view.js';

export function TokensView(_props: ViewProps) {
  return (
    <main>
      <h1>Tokens</h1>
    </main>
  );
}
