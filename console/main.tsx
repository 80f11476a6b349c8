// The console at /console: sign in with an API token, then the views. Rendered with Preact; every text from
// the store goes through JSX as text, never as HTML.
import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { EventsView } from './events.js';
import { PlantPage } from './plant.js';
import { PlantsView } from './plants.js';
import { clientFor, currentToken, forgetToken, keepToken, messageOf, storedToken, type Current } from './session.js';
import { StatusView } from './status.js';
import { TokensView } from './tokens.js';
import type { Scope, ViewProps } from './view.js';
import { WebhooksView } from './webhooks.js';

function SignIn({ onSignedIn }: { onSignedIn: (token: string) => void }) {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<string>();
  const [busy, setBusy] = useState(false);
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setProblem(undefined);
    try {
      // Any valid token may read itself, whatever its scopes.
      const { data, error, response } = await clientFor(token.trim()).GET('/tokens/current');
      if (data) onSignedIn(token.trim());
      else setProblem(messageOf(error, response));
    } catch (err) {
      setProblem(messageOf(err));
    } finally {
      setBusy(false);
    }
  }
  return (
    <main class="sign-in">
      <h1>plant-store console</h1>
      <form onSubmit={submit}>
        <label for="token">API token</label>
        <input id="token" type="password" autocomplete="off" spellcheck={false} value={token} onInput={(e) => setToken(e.currentTarget.value)} required />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {problem && <p role="alert">{problem}</p>}
      </form>
      <p class="hint">The token stays in this tab only, and is forgotten when you sign out or close it.</p>
    </main>
  );
}

const VIEWS = [
  { hash: '#plants', name: 'Plants', View: PlantsView },
  { hash: '#events', name: 'Events', View: EventsView },
  { hash: '#webhooks', name: 'Webhooks', View: WebhooksView },
  { hash: '#tokens', name: 'Tokens', View: TokensView },
  { hash: '#status', name: 'Status', View: StatusView },
] as const;

/** The address after the #: a view (#events), or a thing within one (#plants/ID). */
function useRoute(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return hash;
}

/** What the token may do (GET /tokens/current), loaded once per token: undefined while loading. */
function useCurrent(client: ViewProps['client'] | undefined): Current | undefined {
  const [current, setCurrent] = useState<Current>();
  useEffect(() => {
    setCurrent(undefined);
    if (!client) return;
    let live = true;
    void currentToken(client).then((c) => live && setCurrent(c));
    return () => {
      live = false;
    };
  }, [client]);
  return current;
}

function App() {
  const [token, setToken] = useState(storedToken());
  const route = useRoute();
  // One client per token: views reload when their client changes.
  const client = useMemo(() => (token ? clientFor(token) : undefined), [token]);
  const current = useCurrent(client);
  // The same function while the scopes are the same, so that a view may depend on it.
  const can = useMemo(() => {
    const scopes = current && 'scopes' in current ? current.scopes : [];
    return (scope: Scope) => scopes.includes(scope);
  }, [current]);
  if (!token || !client) {
    return (
      <SignIn
        onSignedIn={(t) => {
          keepToken(t);
          setToken(t);
        }}
      />
    );
  }
  const props: ViewProps = { client, can };
  const view = VIEWS.find((v) => route === v.hash || route.startsWith(`${v.hash}/`)) ?? VIEWS[0];
  const plantId = /^#plants\/(-?\d+)$/.test(route) ? BigInt(route.slice('#plants/'.length)) : undefined;
  return (
    <>
      <header>
        <nav aria-label="Views">
          {VIEWS.map((v) => (
            <a href={v.hash} aria-current={v === view ? 'page' : undefined} key={v.hash}>
              {v.name}
            </a>
          ))}
        </nav>
        <button
          type="button"
          onClick={() => {
            forgetToken();
            setToken(undefined);
          }}
        >
          Sign out
        </button>
      </header>
      {current === undefined ? (
        <main>
          <p role="status">Loading</p>
        </main>
      ) : 'problem' in current ? (
        <main>
          <p role="alert">{current.problem}</p>
        </main>
      ) : /* The list stays mounted under a plant's page, so Back finds the search and page it left. */ view.hash === '#plants' ? (
        <>
          <div hidden={plantId !== undefined}>
            <PlantsView {...props} />
          </div>
          {plantId !== undefined && <PlantPage client={props.client} can={props.can} id={plantId} key={String(plantId)} />}
        </>
      ) : (
        <view.View {...props} />
      )}
    </>
  );
}

render(<App />, document.getElementById('app')!);
