// One subscription of the Webhooks view, at #webhooks/<id>: its facts, its deliveries (read again every few
// seconds), Resend, Recover and delete. Each attempt's detail and the chart are in attempts.tsx.
import { useEffect, useState } from 'preact/hooks';
import type { PlantStoreClient, Webhook, WebhookDelivery } from '@plant-store/client';
import { messageOf } from './session.js';
import { Confirm } from './parts.js';
import { AttemptDetail, AttemptsChart } from './attempts.js';
import { when } from './webhook-time.js';

/** Deliveries asked for at first, and how many more "Show more" asks for (the API has a limit, no cursor). */
const PAGE = 20;
const MAX_LIMIT = 1000;
/** How often the open subscription's deliveries are read again. */
const REFRESH_MS = 3000;

/** One subscription: its facts, its deliveries and their attempts, Resend, Recover, delete, and the chart. */
export function Subscription({ client, id }: { client: PlantStoreClient; id: string }) {
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
