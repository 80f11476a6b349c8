// Plants: search (the API's q: accents and case ignored), a tag filter, the four orders, pages by cursor both
// ways, the exact count on demand, and a form for a new plant. Ids are bigints from the client and shown digit
// for digit. A refusal shows the API's own message.
import { useEffect, useState } from 'preact/hooks';
import { nextPlantsPage, type operations, type PlantStoreClient } from '@plant-store/client';
import { NameAndTag } from './fields.js';
import { messageOf } from './session.js';
import type { ViewProps } from './view.js';
import { NotAllowed } from './parts.js';

type Query = NonNullable<operations['listPlants']['parameters']['query']>;
type Sort = NonNullable<Query['sort']>;
/** A plant as the list gives it: id, name, tag and version. */
type Listed = operations['listPlants']['responses'][200]['content']['application/json'][number];

const PAGE = 20;

export function PlantsView({ client, can }: ViewProps) {
  if (!can('plants:read')) {
    return <NotAllowed title="Plants">This token may not read plants: that needs the plants:read scope.</NotAllowed>;
  }
  return <PlantList client={client} can={can} />;
}

function PlantList({ client, can }: ViewProps) {
  const [q, setQ] = useState('');
  const [tag, setTag] = useState('');
  const [sort, setSort] = useState<Sort>('id');
  // The query of the page shown, and those of the pages before it (for Previous).
  const [page, setPage] = useState<Query>({ sort: 'id', limit: PAGE });
  const [before, setBefore] = useState<Query[]>([]);
  const [rows, setRows] = useState<Listed[]>([]);
  const [next, setNext] = useState<Query>();
  const [count, setCount] = useState<string>();
  const [problem, setProblem] = useState<string>();
  const [creating, setCreating] = useState(false);
  const [loaded, setLoaded] = useState(0);

  useEffect(() => {
    let current = true;
    void (async () => {
      const { data, error, response } = await client.GET('/plants', { params: { query: page } });
      if (!current) return;
      if (!data) {
        setProblem(messageOf(error, response));
        setRows([]);
        setNext(undefined);
        return;
      }
      setProblem(undefined);
      setRows(data);
      setNext(nextPlantsPage(response));
    })().catch((err: unknown) => current && setProblem(messageOf(err)));
    return () => {
      current = false;
    };
  }, [client, page, loaded]);

  function search(e: Event) {
    e.preventDefault();
    setBefore([]);
    setCount(undefined);
    setPage({ limit: PAGE, sort, ...(q.trim() && { q: q.trim() }), ...(tag.trim() && { tag: tag.trim() }) });
  }

  async function countAll() {
    const { error, response } = await client.GET('/plants', {
      params: { query: { ...page, limit: 1, after: undefined, after_name: undefined }, header: { Prefer: 'count=exact' } },
    });
    const total = response.headers.get('x-total-count');
    if (total !== null) setCount(total);
    else setProblem(messageOf(error, response));
  }

  return (
    <main>
      <h1>Plants</h1>
      <form role="search" onSubmit={search} class="filters">
        <label>
          Search plants
          <input type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        </label>
        <label>
          Tag
          <input value={tag} onInput={(e) => setTag(e.currentTarget.value)} />
        </label>
        <label>
          Sort
          <select value={sort} onChange={(e) => setSort(e.currentTarget.value as Sort)}>
            <option value="id">ID, ascending</option>
            <option value="-id">ID, descending</option>
            <option value="name">Name, A to Z</option>
            <option value="-name">Name, Z to A</option>
          </select>
        </label>
        <button type="submit">Search</button>
      </form>
      {problem && <p role="alert">{problem}</p>}
      <div class="actions">
        {/* Offered only to a token that may write: the API would refuse it anyway. */}
        {can('plants:write') && (
          <button type="button" onClick={() => setCreating(!creating)} aria-expanded={creating}>
            New plant
          </button>
        )}
        <button type="button" onClick={countAll}>
          Count
        </button>
        {count !== undefined && <output aria-label="Plants found">{count} plants</output>}
      </div>
      {creating && can('plants:write') && (
        <NewPlantForm
          client={client}
          onCreated={() => {
            setCreating(false);
            setLoaded(loaded + 1);
          }}
        />
      )}
      <table>
        <caption>Plants on this page</caption>
        <thead>
          <tr>
            <th scope="col">ID</th>
            <th scope="col">Name</th>
            <th scope="col">Tag</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((p) => (
            <tr key={String(p.id)}>
              <td class="id">
                <a href={`#plants/${String(p.id)}`}>{String(p.id)}</a>
              </td>
              <td>{p.name}</td>
              <td>{p.tag ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {rows.length === 0 && !problem && <p>No plants here.</p>}
      <nav aria-label="Pages" class="pages">
        <button
          type="button"
          disabled={before.length === 0}
          onClick={() => {
            setPage(before.at(-1)!);
            setBefore(before.slice(0, -1));
          }}
        >
          Previous page
        </button>
        <button
          type="button"
          disabled={!next}
          onClick={() => {
            setBefore([...before, page]);
            setPage(next!);
          }}
        >
          Next page
        </button>
      </nav>
    </main>
  );
}

function NewPlantForm({ client, onCreated }: { client: PlantStoreClient; onCreated: () => void }) {
  const [id, setId] = useState('');
  const [name, setName] = useState('');
  const [tag, setTag] = useState('');
  const [problem, setProblem] = useState<string>();
  async function create(e: Event) {
    e.preventDefault();
    if (!/^-?\d+$/.test(id.trim())) {
      setProblem('The ID is a whole number, such as 42.');
      return;
    }
    const body = { id: BigInt(id.trim()), name, ...(tag !== '' && { tag }) };
    const { data, error, response } = await client.POST('/plants', { body });
    if (data) onCreated();
    else setProblem(messageOf(error, response));
  }
  return (
    <form class="new-plant" onSubmit={create} aria-label="New plant">
      <label>
        ID
        <input inputMode="numeric" value={id} onInput={(e) => setId(e.currentTarget.value)} required />
      </label>
      <NameAndTag name={name} tag={tag} onName={setName} onTag={setTag} />
      <button type="submit">Create</button>
      {problem && <p role="alert">{problem}</p>}
    </form>
  );
}
