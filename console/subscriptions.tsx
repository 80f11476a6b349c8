// The Webhooks view's list: every subscription, and the form for a new one, whose signing secret is shown once.
import { useEffect, useState } from 'preact/hooks';
import type { PlantStoreClient, Webhook, WebhookWithSecret } from '@plant-store/client';
import { messageOf } from './session.js';
import { when } from './webhook-time.js';

type Format = Webhook['format'];
type EventType = Webhook['events'][number];

const EVENT_TYPES: readonly EventType[] = ['newPlant', 'plantUpdated', 'plantDeleted'];

export function Subscriptions({ client, canCreate }: { client: PlantStoreClient; canCreate: boolean }) {
  const [subs, setSubs] = useState<Webhook[]>();
  const [problem, setProblem] = useState<string>();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<WebhookWithSecret>();
  const [loaded, setLoaded] = useState(0);
  // A 403 here: the token lacks webhooks:manage after all, and nothing is offered.
  const [refused, setRefused] = useState(false);

  useEffect(() => {
    let current = true;
    void (async () => {
      const { data, error, response } = await client.GET('/webhooks');
      if (!current) return;
      if (data) {
        setSubs(data);
        setProblem(undefined);
      } else {
        setRefused(response.status === 403);
        setProblem(messageOf(error, response));
      }
    })().catch((err: unknown) => current && setProblem(messageOf(err)));
    return () => {
      current = false;
    };
  }, [client, loaded]);

  if (refused) return <p role="alert">{problem}</p>;
  return (
    <>
      {problem && <p role="alert">{problem}</p>}
      <div class="actions">
        {canCreate ? (
          <button type="button" onClick={() => setCreating(!creating)} aria-expanded={creating}>
            New subscription
          </button>
        ) : (
          <p>Creating a subscription also needs the plants:read scope, which this token lacks.</p>
        )}
      </div>
      {creating && (
        <NewSubscriptionForm
          client={client}
          onCreated={(sub) => {
            setCreating(false);
            setCreated(sub);
            setLoaded(loaded + 1);
          }}
        />
      )}
      {created && (
        <section aria-label="Signing secret" class="secret">
          <h2>Signing secret</h2>
          <p>
            The secret of the subscription to <span class="url">{created.url}</span>. Copy it now: it will not be shown again.
          </p>
          <code class="wrap">{created.secret}</code>
          <p>
            <a href={`#webhooks/${encodeURIComponent(created.id)}`}>See its deliveries</a>{' '}
            <button type="button" onClick={() => setCreated(undefined)}>
              Done
            </button>
          </p>
        </section>
      )}
      <table>
        <caption>Subscriptions</caption>
        <thead>
          <tr>
            <th scope="col">URL</th>
            <th scope="col">Events</th>
            <th scope="col">Format</th>
            <th scope="col">State</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {(subs ?? []).map((s) => (
            <tr key={s.id}>
              <td class="url">
                <a href={`#webhooks/${encodeURIComponent(s.id)}`}>{s.url}</a>
                {s.description && <div class="hint">{s.description}</div>}
              </td>
              <td>{s.events.join(', ')}</td>
              <td>{s.format}</td>
              <td>{s.active ? 'active' : `disabled: ${s.disabledReason ?? 'no reason given'}`}</td>
              <td>{when(s.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {subs?.length === 0 && <p>No subscriptions yet.</p>}
    </>
  );
}

function NewSubscriptionForm({ client, onCreated }: { client: PlantStoreClient; onCreated: (sub: WebhookWithSecret) => void }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<EventType[]>([...EVENT_TYPES]);
  const [format, setFormat] = useState<Format>('plain');
  const [description, setDescription] = useState('');
  const [problem, setProblem] = useState<string>();
  async function create(e: Event) {
    e.preventDefault();
    if (events.length === 0) {
      setProblem('Choose at least one event type.');
      return;
    }
    const body = { url: url.trim(), events, format, ...(description.trim() && { description: description.trim() }) };
    try {
      const { data, error, response } = await client.POST('/webhooks', { body });
      if (data) onCreated(data);
      else setProblem(messageOf(error, response));
    } catch (err) {
      setProblem(messageOf(err));
    }
  }
  return (
    <form class="new-subscription" onSubmit={create} aria-label="New subscription">
      <label>
        URL
        <input type="url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} required placeholder="https://example.com/hooks" />
      </label>
      <fieldset>
        <legend>Events</legend>
        {EVENT_TYPES.map((type) => (
          <label class="check" key={type}>
            <input
              type="checkbox"
              checked={events.includes(type)}
              onChange={(e) => setEvents(e.currentTarget.checked ? EVENT_TYPES.filter((t) => t === type || events.includes(t)) : events.filter((t) => t !== type))}
            />
            {type}
          </label>
        ))}
      </fieldset>
      <label>
        Format
        <select value={format} onChange={(e) => setFormat(e.currentTarget.value as Format)}>
          <option value="plain">plain: the event's body</option>
          <option value="envelope">envelope: type, timestamp and data</option>
        </select>
      </label>
      <label>
        Description
        <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </label>
      <button type="submit">Create</button>
      {problem && <p role="alert">{problem}</p>}
    </form>
  );
}
