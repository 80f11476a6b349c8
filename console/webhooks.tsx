// Webhooks: the subscriptions (list, a form for a new one whose secret is shown once, delete after confirmation)
// and, at #webhooks/<id>, one subscription's deliveries with every attempt's request and answer, Resend, Recover
// and a chart of delivery attempts that succeeded and failed per minute. The receiver's answer is untrusted text: JSX renders it as text only.
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { PlantStoreClient, Webhook, WebhookDelivery, WebhookWithSecret } from '@plant-store/client';
import { TimeChart } from './chart.js';
import { messageOf } from './session.js';
import type { ViewProps } from './view.js';
import { Confirm, NotAllowed } from './parts.js';

type Attempt = WebhookDelivery['attempts'][number];
type Format = Webhook['format'];
type EventType = Webhook['events'][number];

const EVENT_TYPES: readonly EventType[] = ['newPlant', 'plantUpdated', 'plantDeleted'];
/** Deliveries asked for at first, and how many more "Show more" asks for (the API has a limit, no cursor). */
const PAGE = 20;
const MAX_LIMIT = 1000;
/** How often the open subscription's deliveries are read again. */
const REFRESH_MS = 3000;

/** An API time as people read it, in UTC to the second. */
function when(iso: string): string {
  return iso.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
}

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

function Subscriptions({ client, canCreate }: { client: PlantStoreClient; canCreate: boolean }) {
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

/** One subscription: its facts, its deliveries and their attempts, Resend, Recover, delete, and the chart. */
function Subscription({ client, id }: { client: PlantStoreClient; id: string }) {
  const [sub, setSub] = useState<Webhook>();
  const [deliveries, setDeliveries] = useState<WebhookDelivery[]>([]);
  const [limit, setLimit] = useState(PAGE);
  const [problem, setProblem] = useState<string>();
  const [note, setNote] = useState<string>();
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const [confirming, setConfirming] = useState(false);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    let current = true;
    void (async () => {
      const { data, error, response } = await client.GET('/webhooks/{id}', { params: { path: { id } } });
      if (!current) return;
      if (data) setSub(data);
      else setProblem(messageOf(error, response));
    })().catch((err: unknown) => current && setProblem(messageOf(err)));
    return () => {
      current = false;
    };
  }, [client, id]);

  // The deliveries, read again every few seconds while the page is open: new ones and new attempts show up.
  useEffect(() => {
    let current = true;
    const read = async () => {
      const { data, error, response } = await client.GET('/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit } } });
      if (!current) return;
      if (data) setDeliveries(data);
      else setProblem(messageOf(error, response));
    };
    void read().catch((err: unknown) => current && setProblem(messageOf(err)));
    const timer = setInterval(() => void read().catch(() => undefined), REFRESH_MS);
    return () => {
      current = false;
      clearInterval(timer);
    };
  }, [client, id, limit, tick]);

  async function resend(d: WebhookDelivery) {
    setProblem(undefined);
    const { data, error, response } = await client.POST('/webhooks/{id}/deliveries/{deliveryId}/retry', { params: { path: { id, deliveryId: d.id } } });
    if (data) setNote(`Delivery of ${d.eventId} is due now.`);
    else setProblem(messageOf(error, response));
    setTick(tick + 1);
  }

  async function remove() {
    const { error, response } = await client.DELETE('/webhooks/{id}', { params: { path: { id } } });
    if (response.ok) location.hash = '#webhooks';
    else setProblem(messageOf(error, response));
  }

  function toggle(deliveryId: string) {
    const next = new Set(open);
    if (!next.delete(deliveryId)) next.add(deliveryId);
    setOpen(next);
  }

  return (
    <>
      <p>
        <a href="#webhooks">All subscriptions</a>
      </p>
      {sub && (
        <section aria-labelledby="subscription-heading">
          <h2 id="subscription-heading" class="url">
            {sub.url}
          </h2>
          <dl class="facts">
            <dt>Events</dt>
            <dd>{sub.events.join(', ')}</dd>
            <dt>Format</dt>
            <dd>{sub.format}</dd>
            <dt>State</dt>
            <dd>{sub.active ? 'active' : `disabled: ${sub.disabledReason ?? 'no reason given'}`}</dd>
            <dt>Created</dt>
            <dd>{when(sub.createdAt)}</dd>
            {sub.description && (
              <>
                <dt>Description</dt>
                <dd>{sub.description}</dd>
              </>
            )}
          </dl>
        </section>
      )}
      {problem && <p role="alert">{problem}</p>}
      <p role="status">{note ?? ''}</p>
      <div class="actions">
        <button type="button" onClick={() => setConfirming(true)} aria-expanded={confirming}>
          Delete subscription
        </button>
      </div>
      {confirming && (
        <Confirm label="Confirm delete" question="Delete this subscription? Its pending deliveries are cancelled." yes="Yes, delete it" onYes={remove} onCancel={() => setConfirming(false)} />
      )}
      <RecoverForm client={client} id={id} onRecovered={(text) => (setNote(text), setTick(tick + 1))} onProblem={setProblem} />
      <AttemptsChart deliveries={deliveries} />
      <h2>Deliveries</h2>
      <div class="actions">
        <button type="button" onClick={() => setTick(tick + 1)}>
          Refresh
        </button>
      </div>
      {deliveries.length === 0 ? (
        <p>No deliveries yet.</p>
      ) : (
        <ul class="deliveries">
          {deliveries.map((d) => (
            <li key={d.id}>
              <h3 class="wrap">{d.eventId}</h3>
              <p>
                <strong>{d.status}</strong>, created {when(d.createdAt)}
                {d.nextAttemptAt && `, next attempt ${when(d.nextAttemptAt)}`}, {d.attempts.length} {d.attempts.length === 1 ? 'attempt' : 'attempts'}
              </p>
              <div class="actions">
                <button type="button" aria-expanded={open.has(d.id)} onClick={() => toggle(d.id)}>
                  Attempts
                </button>
                <button type="button" onClick={() => void resend(d)}>
                  Resend
                </button>
              </div>
              {open.has(d.id) && (
                <ol class="attempts">
                  {d.attempts.map((a, i) => (
                    <AttemptDetail attempt={a} n={i + 1} key={i} />
                  ))}
                </ol>
              )}
            </li>
          ))}
        </ul>
      )}
      {deliveries.length === limit && limit < MAX_LIMIT && (
        <button type="button" onClick={() => setLimit(Math.min(MAX_LIMIT, limit + PAGE))}>
          Show more deliveries
        </button>
      )}
    </>
  );
}

/** Headers as the lines of an HTTP message, one `name: value` a line. */
function headerLines(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
}

function AttemptDetail({ attempt: a, n }: { attempt: Attempt; n: number }) {
  return (
    <li>
      <h4>
        Attempt {n} at {when(a.at)}
      </h4>
      <dl class="facts">
        <dt>Status code</dt>
        <dd>{a.statusCode ?? 'no answer'}</dd>
        {a.error && (
          <>
            <dt>Error</dt>
            <dd class="wrap">{a.error}</dd>
          </>
        )}
        <dt>Duration</dt>
        <dd>{a.durationMs} ms</dd>
      </dl>
      {a.request ? (
        <>
          <h5>Request headers</h5>
          <pre class="wrap">{headerLines(a.request.headers)}</pre>
          <h5>Request body</h5>
          <pre class="wrap">{a.request.body}</pre>
        </>
      ) : (
        <p>No request recorded: nothing was sent, or the attempt is older than this record.</p>
      )}
      {a.response ? (
        <>
          <h5>Answer headers</h5>
          <pre class="wrap">{headerLines(a.response.headers)}</pre>
          <h5>Answer excerpt{a.response.truncated ? ' (cut: the answer went on)' : ''}</h5>
          <pre class="wrap">{a.response.excerpt}</pre>
        </>
      ) : (
        <p>No answer recorded.</p>
      )}
    </li>
  );
}

/** A date-time input's value (local time, to the minute) for `date`. */
function localInput(date: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${p(date.getMonth() + 1)}-${p(date.getDate())}T${p(date.getHours())}:${p(date.getMinutes())}`;
}

function RecoverForm(props: { client: PlantStoreClient; id: string; onRecovered: (text: string) => void; onProblem: (text: string) => void }) {
  const [since, setSince] = useState(() => localInput(new Date(Date.now() - 3_600_000)));
  async function recover(e: Event) {
    e.preventDefault();
    const at = new Date(since);
    if (Number.isNaN(at.getTime())) return props.onProblem('Since is a date and time, such as 2026-03-14T08:00.');
    const { data, error, response } = await props.client.POST('/webhooks/{id}/recover', { params: { path: { id: props.id } }, body: { since: at.toISOString() } });
    if (!data) return props.onProblem(messageOf(error, response));
    const noun = data.queued === 1 ? 'delivery' : 'deliveries';
    props.onRecovered(`Recover queued ${data.queued} failed or cancelled ${noun}${data.more ? '; more remain, recover again' : ''}.`);
  }
  return (
    <form class="recover" onSubmit={recover} aria-label="Recover deliveries">
      <label>
        Since
        <input type="datetime-local" value={since} onInput={(e) => setSince(e.currentTarget.value)} required />
      </label>
      <button type="submit">Recover</button>
      <span class="hint">Sends again every failed or cancelled delivery made since then (your local time).</span>
    </form>
  );
}

/** Attempts that succeeded (2xx) and failed per minute over the last hour, from the deliveries loaded. */
function AttemptsChart({ deliveries }: { deliveries: WebhookDelivery[] }) {
  const { times, succeeded, failed, totals } = useMemo(() => {
    const end = Math.floor(Date.now() / 60_000) + 1;
    const start = end - 60;
    const times = Array.from({ length: 60 }, (_, i) => (start + i) * 60);
    const succeeded = new Array<number>(60).fill(0);
    const failed = new Array<number>(60).fill(0);
    for (const d of deliveries) {
      for (const a of d.attempts) {
        const minute = Math.floor(Date.parse(a.at) / 60_000) - start;
        if (minute < 0 || minute >= 60) continue;
        const ok = a.statusCode !== undefined && a.statusCode >= 200 && a.statusCode <= 299;
        const counts = ok ? succeeded : failed;
        counts[minute] = (counts[minute] ?? 0) + 1;
      }
    }
    const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
    return { times, succeeded, failed, totals: { succeeded: sum(succeeded), failed: sum(failed) } };
  }, [deliveries]);
  const series = useMemo(
    () => [
      { label: 'Succeeded', values: succeeded, color: '#1b7f3b' },
      { label: 'Failed', values: failed, color: '#b00020' },
    ],
    [succeeded, failed],
  );
  return (
    <>
      <TimeChart title="Delivery attempts per minute, last hour" times={times} series={series} />
      <p>
        Attempts in the last hour, of the deliveries shown: {totals.succeeded} succeeded, {totals.failed} failed.
      </p>
    </>
  );
}
