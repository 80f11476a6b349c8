// Tokens: the list (never a secret), a new token with scopes the signed-in token holds itself (the API refuses
// any other), its secret shown once, and revocation after confirmation. A token without tokens:manage is told so
// and offered nothing. A refusal shows the API's own message.
import { useEffect, useState } from 'preact/hooks';
import type { components, PlantStoreClient } from '@plant-store/client';
import { messageOf } from './session.js';
import type { Scope, ViewProps } from './view.js';
import { Confirm, NotAllowed } from './parts.js';

type Token = components['schemas']['Token'];
type Made = components['schemas']['TokenWithSecret'];

const SCOPES: readonly Scope[] = ['plants:read', 'plants:write', 'webhooks:manage', 'metrics:read', 'tokens:manage'];
const PAGE = 100;

/** The cursor of the next page, from the answer's `Link: <...after=tok_...>; rel="next"`. */
function nextAfter(response: Response): string | undefined {
  const m = /<[^>]*[?&]after=([^&>]+)[^>]*>;\s*rel="next"/.exec(response.headers.get('link') ?? '');
  return m ? decodeURIComponent(m[1]!) : undefined;
}

/** A time as the API gives it, shown to the minute in UTC: the same for every reader of the page. */
function when(at: string | undefined, otherwise: string): string {
  return at ? `${at.slice(0, 16).replace('T', ' ')} UTC` : otherwise;
}

export function TokensView({ client, can }: ViewProps) {
  if (!can('tokens:manage')) {
    return <NotAllowed title="Tokens">This token may not manage tokens: that needs the tokens:manage scope.</NotAllowed>;
  }
  return <ManagedTokens client={client} can={can} />;
}

function ManagedTokens({ client, can }: ViewProps) {
  const [rows, setRows] = useState<Token[]>([]);
  const [next, setNext] = useState<string>();
  const [problem, setProblem] = useState<string>();
  const [creating, setCreating] = useState(false);
  const [made, setMade] = useState<Made>();
  const [confirming, setConfirming] = useState<string>();
  const [loaded, setLoaded] = useState(0);

  async function load(after?: string): Promise<void> {
    const { data, error, response } = await client.GET('/tokens', { params: { query: { limit: PAGE, ...(after !== undefined && { after }) } } });
    if (!data) {
      setProblem(messageOf(error, response));
      return;
    }
    setProblem(undefined);
    setRows((shown) => (after === undefined ? data : [...shown, ...data]));
    setNext(nextAfter(response));
  }

  useEffect(() => {
    void load().catch((err: unknown) => setProblem(messageOf(err)));
  }, [client, loaded]);

  async function revoke(id: string) {
    setConfirming(undefined);
    try {
      const { error, response } = await client.DELETE('/tokens/{id}', { params: { path: { id } } });
      if (response.ok) setLoaded((n) => n + 1);
      else setProblem(messageOf(error, response));
    } catch (err) {
      setProblem(messageOf(err));
    }
  }

  return (
    <main class="tokens">
      <h1>Tokens</h1>
      {problem && <p role="alert">{problem}</p>}
      <div class="actions">
        <button type="button" onClick={() => setCreating(!creating)} aria-expanded={creating}>
          New token
        </button>
      </div>
      {creating && (
        <NewTokenForm
          client={client}
          scopes={SCOPES.filter((s) => can(s))}
          onMade={(token) => {
            setCreating(false);
            setMade(token);
            setLoaded((n) => n + 1);
          }}
        />
      )}
      {made && (
        <section role="region" aria-label="New token secret" class="secret">
          <h2>New token secret</h2>
          <p>
            The secret of {made.name} ({made.id}). Copy it now: it will not be shown again.
          </p>
          <code>{made.secret}</code>
          <div class="actions">
            <button type="button" onClick={() => setMade(undefined)}>
              Done
            </button>
          </div>
        </section>
      )}
      <table>
        <caption>Tokens, oldest first</caption>
        <thead>
          <tr>
            <th scope="col">ID</th>
            <th scope="col">Name</th>
            <th scope="col">Scopes</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Expires</th>
            <th scope="col">Revoked</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((t) => (
            <tr key={t.id}>
              <td class="id">{t.id}</td>
              <td>{t.name}</td>
              <td>{t.scopes.join(' ')}</td>
              <td>{when(t.createdAt, '')}</td>
              {/* Last-used times are written in batches: absent means not known yet, not never. */}
              <td>{when(t.lastUsedAt, 'not known yet')}</td>
              <td>{when(t.expiresAt, 'never')}</td>
              <td>{when(t.revokedAt, 'no')}</td>
              <td>
                {!t.revokedAt && confirming !== t.id && (
                  <button type="button" aria-label={`Revoke ${t.id}`} onClick={() => setConfirming(t.id)}>
                    Revoke
                  </button>
                )}
                {confirming === t.id && (
                  <Confirm label="Confirm revoke" question={`Revoke ${t.id}? Requests with it will be refused.`} yes="Yes, revoke it" onYes={() => revoke(t.id)} onCancel={() => setConfirming(undefined)} />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {next !== undefined && (
        <div class="actions">
          <button type="button" onClick={() => void load(next).catch((err: unknown) => setProblem(messageOf(err)))}>
            More tokens
          </button>
        </div>
      )}
    </main>
  );
}

function NewTokenForm({ client, scopes, onMade }: { client: PlantStoreClient; scopes: Scope[]; onMade: (token: Made) => void }) {
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<Scope[]>([]);
  const [expires, setExpires] = useState('');
  const [problem, setProblem] = useState<string>();
  async function create(e: Event) {
    e.preventDefault();
    setProblem(undefined);
    // A date means the start of that day, UTC.
    const body = { name, scopes: chosen, ...(expires !== '' && { expiresAt: `${expires}T00:00:00Z` }) };
    try {
      const { data, error, response } = await client.POST('/tokens', { body });
      if (data) onMade(data);
      else setProblem(messageOf(error, response));
    } catch (err) {
      setProblem(messageOf(err));
    }
  }
  return (
    <form class="new-token" onSubmit={create} aria-label="New token">
      <label>
        Name
        <input value={name} maxLength={100} onInput={(e) => setName(e.currentTarget.value)} required />
      </label>
      <fieldset>
        <legend>Scopes (only those this token holds)</legend>
        {scopes.map((s) => (
          <label class="check" key={s}>
            <input
              type="checkbox"
              checked={chosen.includes(s)}
              onChange={(e) => setChosen(e.currentTarget.checked ? [...chosen, s] : chosen.filter((x) => x !== s))}
            />
            {s}
          </label>
        ))}
      </fieldset>
      <label>
        Expires
        <input type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} aria-describedby="expires-hint" />
      </label>
      <p id="expires-hint" class="hint">
        Optional: the token stops working at 00:00 UTC on that day.
      </p>
      <button type="submit">Create</button>
      {problem && <p role="alert">{problem}</p>}
    </form>
  );
}
