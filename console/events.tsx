// Events: the live stream (a ticket from POST /events/tickets, then the browser's EventSource on this origin, so the
// token never goes in a URL), filters by type and plant (the API's own `types` and `plant`, the stream reopened
// with them), pause and resume, and the older events paged from the feed. Every event is listed once: the stream
// resumes from the last event it gave (EventSource's Last-Event-ID, or `after` on a new ticket), and an id already
// listed is never listed again. Ids and versions are int64, parsed losslessly as the typed client parses them.
import { useEffect, useRef, useState } from 'preact/hooks';
import { parseJson, type FeedEvent } from '@plant-store/client';
import { messageOf } from './session.js';
import type { ViewProps } from './view.js';
import { NotAllowed } from './parts.js';

type EventType = FeedEvent['type'];
const TYPES: readonly EventType[] = ['newPlant', 'plantUpdated', 'plantDeleted'];
/** Events a page of older events asks for. */
const PAGE = 50;
/** Live events kept on screen; the older ones stay in the feed (Older events). */
const LIVE_MAX = 500;
/** The wait before a new ticket after the stream closed, doubled after each failure in a row up to the last. */
const RETRY_MS = [2_000, 4_000, 8_000, 16_000, 30_000];

interface Row {
  id: string;
  type: EventType;
  plant: bigint;
  version: bigint;
  /** When the event was made: the feed's createdAt, or for a live event the time its id carries. */
  at: Date;
}

interface Filter {
  type: EventType | '';
  plant: string;
}

/**
 * The time an event id carries: its first 6 bytes are the milliseconds since 1970, which its first 8 base64url
 * characters spell exactly. A stream's frame has no createdAt (its data is the webhook body, byte for byte).
 */
function idTime(id: string): Date {
  const digits = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let ms = 0;
  for (const c of id.slice('msg_'.length, 'msg_'.length + 8)) ms = ms * 64 + digits.indexOf(c);
  return new Date(ms);
}

/** A stream frame's data, ids and versions as bigints (JSON.parse would round ids above 2^53). */
function frameRow(type: EventType, id: string, data: string): Row {
  const d = parseJson(data, ['/id', '/version']) as { id: bigint; version: bigint };
  return { id, type, plant: d.id, version: d.version, at: idTime(id) };
}

export function EventsView({ client, can }: ViewProps) {
  if (!can('plants:read')) {
    return <NotAllowed title="Events">This token cannot read events: the feed and its stream need the plants:read scope.</NotAllowed>;
  }
  return <EventsFeed client={client} />;
}

function EventsFeed({ client }: Pick<ViewProps, 'client'>) {
  // The filter being edited, and the one the stream and the older events use.
  const [type, setType] = useState<Filter['type']>('');
  const [plant, setPlant] = useState('');
  const [filter, setFilter] = useState<Filter>({ type: '', plant: '' });
  const [live, setLive] = useState<Row[]>([]);
  const [held, setHeld] = useState<Row[]>([]);
  const [paused, setPaused] = useState(false);
  const [state, setState] = useState('Connecting…');
  const [problem, setProblem] = useState<string>();
  // Kept until the next filter: the stream could not resume where it was (events were lost to it).
  const [notice, setNotice] = useState<string>();
  const [older, setOlder] = useState<Row[]>([]);
  // Where the next page of older events starts (undefined: from the oldest kept); done once the feed has no more.
  const [olderAfter, setOlderAfter] = useState<string>();
  const [olderDone, setOlderDone] = useState(false);
  const [olderAsked, setOlderAsked] = useState(false);
  const [olderProblem, setOlderProblem] = useState<string>();
  const [olderBusy, setOlderBusy] = useState(false);
  // Every id listed, live or older: what makes each event appear once.
  const listed = useRef(new Set<string>());
  // The last event the stream gave: where a new stream resumes (after a new ticket, or a filter change).
  const lastId = useRef<string | undefined>(undefined);
  const pausedNow = useRef(false);
  // Which stream's events count: a stream closed for a new filter may still hand over an event before it closes.
  const generation = useRef(0);

  function receive(row: Row) {
    lastId.current = row.id;
    if (listed.current.has(row.id)) return;
    listed.current.add(row.id);
    if (pausedNow.current) setHeld((h) => [...h, row]);
    else setLive((l) => [row, ...l].slice(0, LIVE_MAX));
  }

  useEffect(() => {
    let source: EventSource | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    let failures = 0;
    const mine = generation.current;
    const again = () => {
      timer = setTimeout(open, RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]);
      failures++;
    };
    async function open() {
      setState('Connecting…');
      let ticket: string;
      try {
        const { data, error, response } = await client.POST('/events/tickets', {});
        if (stopped) return;
        if (!data) {
          setProblem(messageOf(error, response));
          // A refusal that may pass (a limit, an instance stopping) is asked again; 401 and 403 will not pass.
          if (response.status === 429 || response.status >= 500) again();
          else setState('Stopped.');
          return;
        }
        ticket = data.ticket;
        // An EventSource cannot tell why it was refused. A cursor that retention removed (410), or that a restore
        // lost, would be refused each time: ask the feed, and say what happened and follow from now instead.
        if (failures > 0 && lastId.current) {
          const probe = await client.GET('/events', { params: { query: { after: lastId.current, limit: 1 } } });
          if (stopped) return;
          if (probe.response.status === 400 || probe.response.status === 410) {
            setNotice(`${messageOf(probe.error, probe.response)} The stream follows from now on.`);
            lastId.current = undefined;
          }
        }
      } catch {
        // The service is unreachable (restarting): ask again.
        if (stopped) return;
        setState('The service is unreachable: trying again.');
        again();
        return;
      }
      const query = new URLSearchParams({ ticket });
      if (filter.type) query.set('types', filter.type);
      if (filter.plant) query.set('plant', filter.plant);
      // The same ticket's own reconnects send Last-Event-ID; a new ticket resumes with `after`.
      if (lastId.current) query.set('after', lastId.current);
      const s = (source = new EventSource(`${location.origin}/events?${query}`));
      s.onopen = () => {
        failures = 0;
        setProblem(undefined);
        setState('Live: new events appear as they happen.');
      };
      s.onerror = () => {
        if (s.readyState === EventSource.CLOSED) {
          // Refused (the ticket expired, the token was revoked, or the service answered an error): a new ticket.
          s.close();
          setState('The stream closed: reconnecting.');
          again();
        } else setState('The stream broke: reconnecting.');
      };
      for (const t of TYPES) {
        s.addEventListener(t, (e) => {
          const m = e as MessageEvent<string>;
          if (!stopped && mine === generation.current) receive(frameRow(t, m.lastEventId, m.data));
        });
      }
    }
    void open();
    return () => {
      stopped = true;
      clearTimeout(timer);
      source?.close();
    };
  }, [client, filter]);

  function apply(e: Event) {
    e.preventDefault();
    const id = plant.trim();
    if (id !== '' && !/^-?\d+$/.test(id)) {
      setProblem('The plant ID is a whole number, such as 42.');
      return;
    }
    // A new filter starts a new list: the stream reopens with it, from the last event it gave.
    generation.current++;
    listed.current = new Set();
    setLive([]);
    setHeld([]);
    setOlder([]);
    setOlderAfter(undefined);
    setOlderDone(false);
    setOlderAsked(false);
    setOlderProblem(undefined);
    setProblem(undefined);
    setNotice(undefined);
    setFilter({ type, plant: id });
  }

  function pause() {
    pausedNow.current = !paused;
    if (paused) {
      // Resumed: what arrived meanwhile, newest first, above what was shown.
      setLive((l) => [...[...held].reverse(), ...l].slice(0, LIVE_MAX));
      setHeld([]);
    }
    setPaused(!paused);
  }

  async function loadOlder() {
    setOlderAsked(true);
    setOlderBusy(true);
    // A page asked for under a filter since replaced is dropped.
    const mine = generation.current;
    const query = {
      limit: PAGE,
      ...(olderAfter && { after: olderAfter }),
      ...(filter.type && { types: filter.type }),
      ...(filter.plant && { plant: BigInt(filter.plant) }),
    };
    try {
      const { data, error, response } = await client.GET('/events', { params: { query } });
      if (mine !== generation.current) return;
      // A page: the JSON form of the operation (its other form, the stream, is text).
      const events = data as FeedEvent[] | undefined;
      if (!events) {
        setOlderProblem(messageOf(error, response));
        return;
      }
      setOlderProblem(undefined);
      const fresh: Row[] = [];
      let reachedLive = false;
      for (const e of events) {
        if (listed.current.has(e.id)) {
          // The feed has come up to what the stream lists: the rest is shown live already.
          reachedLive = true;
          continue;
        }
        listed.current.add(e.id);
        fresh.push({ id: e.id, type: e.type, plant: e.data.id, version: e.data.version, at: new Date(e.createdAt) });
      }
      setOlder((o) => [...o, ...fresh]);
      if (events.length > 0) setOlderAfter(events.at(-1)!.id);
      if (reachedLive || !response.headers.get('link')) setOlderDone(true);
    } catch (err) {
      if (mine === generation.current) setOlderProblem(messageOf(err));
    } finally {
      setOlderBusy(false);
    }
  }

  return (
    <main>
      <h1>Events</h1>
      <form class="filters" onSubmit={apply} aria-label="Filter events">
        <label>
          Type
          <select value={type} onChange={(e) => setType(e.currentTarget.value as Filter['type'])}>
            <option value="">All types</option>
            {TYPES.map((t) => (
              <option value={t} key={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Plant ID
          <input inputMode="numeric" value={plant} onInput={(e) => setPlant(e.currentTarget.value)} />
        </label>
        <button type="submit">Apply filters</button>
      </form>
      {problem && <p role="alert">{problem}</p>}
      {notice && <p role="alert">{notice}</p>}
      <div class="actions">
        <button type="button" onClick={pause}>
          {paused ? 'Resume' : 'Pause'}
        </button>
        <p role="status">{paused ? `Paused: ${held.length} new event${held.length === 1 ? '' : 's'} held, shown on resume.` : state}</p>
      </div>
      <EventTable caption="Live events, newest first" rows={live} />
      {live.length === 0 && <p>No events since this page opened{filter.type || filter.plant ? ' that match the filters' : ''}.</p>}

      <h2>Older events</h2>
      <p class="hint">
        The feed pages forward only. So older events start at the oldest event the service keeps (EVENT_RETENTION, 7 days by default), {PAGE} at a time, oldest first,
        up to the live events.
      </p>
      {older.length > 0 && <EventTable caption="Older events, oldest first" rows={older} />}
      {olderAsked && older.length === 0 && olderDone && <p>No older events{filter.type || filter.plant ? ' match the filters' : ''}.</p>}
      {olderProblem && <p role="alert">{olderProblem}</p>}
      <div class="pages">
        <button type="button" onClick={loadOlder} disabled={olderDone || olderBusy}>
          {olderAsked ? 'More older events' : 'Older events'}
        </button>
        {olderDone && <p>All older events are shown.</p>}
      </div>
    </main>
  );
}

function EventTable({ caption, rows }: { caption: string; rows: readonly Row[] }) {
  return (
    <table class="events">
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Type</th>
          <th scope="col">Plant ID</th>
          <th scope="col">Version</th>
          <th scope="col">Event ID</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.id}>
            {/* data-label: the column's name, shown beside the value where the table is stacked (narrow screens). */}
            <td data-label="Time">
              <time dateTime={r.at.toISOString()}>{r.at.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' })}</time>
            </td>
            <td data-label="Type">{r.type}</td>
            <td class="id" data-label="Plant ID">
              {String(r.plant)}
            </td>
            <td class="id" data-label="Version">
              {String(r.version)}
            </td>
            <td class="id" data-label="Event ID">
              {r.id}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
