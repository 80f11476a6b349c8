// Webhooks: the subscriptions (list, a form for a new one whose secret is shown once, delete after confirmation)
// and, at #webhooks/<id>, one subscription's deliveries with every attempt's request and answer, Resend, Recover
// and a chart of delivery attempts that succeeded and failed per minute. The receiver's answer is untrusted text: JSX renders it as text only.
// This file picks the page from the address: the list (subscriptions.tsx) or one subscription (subscription.tsx,
// whose attempts are drawn by attempts.tsx).
import { useEffect, useState } from 'preact/hooks';
import type { ViewProps } from './view.js';
import { NotAllowed } from './parts.js';
import { Subscription } from './subscription.js';
import { Subscriptions } from './subscriptions.js';

/** The subscription id of #webhooks/<id>, or undefined on the list. */
function routeId(): string | undefined {
  const m = /^#webhooks\/(.+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]!) : undefined;
}

export function WebhooksView({ client, can }: ViewProps) {
  const [id, setId] = useState(routeId());
  useEffect(() => {
    const changed = () => setId(routeId());
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);

  if (!can('webhooks:manage')) {
    return <NotAllowed title="Webhooks">This token cannot see or manage webhooks: that needs the webhooks:manage scope.</NotAllowed>;
  }
  return (
    <main class="webhooks">
      <h1>Webhooks</h1>
      {id === undefined ? <Subscriptions client={client} canCreate={can('plants:read')} /> : <Subscription client={client} id={id} key={id} />}
    </main>
  );
}
