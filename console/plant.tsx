// One plant: edit its name and tag with If-Match (the version the page showed), so a change made meanwhile is
// never overwritten: on 412 the newer version is shown beside the user's change, which they can apply again.
// Delete asks for confirmation first, and also sends If-Match. Without plants:write the plant is shown read-only.
import { useEffect, useState } from 'preact/hooks';
import { etagOf, type PlantStoreClient } from '@plant-store/client';
import { NameAndTag } from './fields.js';
import { messageOf } from './session.js';
import type { ViewProps } from './view.js';
import { Confirm } from './parts.js';

interface Shown {
  name: string;
  tag: string;
  etag: string;
}

export function PlantPage({ client, can, id }: { client: PlantStoreClient; can: ViewProps['can']; id: bigint }) {
  const writes = can('plants:write');
  const [shown, setShown] = useState<Shown>();
  const [name, setName] = useState('');
  const [tag, setTag] = useState('');
  const [newer, setNewer] = useState<Shown>();
  const [problem, setProblem] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [confirming, setConfirming] = useState(false);
  const [deleted, setDeleted] = useState(false);

  async function read(): Promise<Shown | undefined> {
    const { data, error, response } = await client.GET('/plants/{id}', { params: { path: { id } } });
    if (!data) {
      setProblem(messageOf(error, response));
      return undefined;
    }
    return { name: data.name, tag: data.tag ?? '', etag: etagOf(response) ?? '*' };
  }

  useEffect(() => {
    void read().then((p) => {
      if (!p) return;
      setShown(p);
      setName(p.name);
      setTag(p.tag);
    });
  }, [client, id]);

  async function save(e: Event) {
    e.preventDefault();
    const base = newer ?? shown;
    if (!base) return;
    setProblem(undefined);
    setNotice(undefined);
    const { data, error, response } = await client.PUT('/plants/{id}', {
      params: { path: { id }, header: { 'If-Match': base.etag } },
      body: { name, ...(tag !== '' && { tag }) },
    });
    if (data) {
      const saved = { name: data.name, tag: data.tag ?? '', etag: etagOf(response) ?? base.etag };
      setShown(saved);
      setNewer(undefined);
      setNotice('Saved.');
      return;
    }
    if (response.status === 412) {
      // Changed meanwhile: show what it is now beside the user's change; saving again applies it over that.
      const current = await read();
      if (current) setNewer(current);
      return;
    }
    setProblem(messageOf(error, response));
  }

  async function remove() {
    const base = newer ?? shown;
    const { error, response } = await client.DELETE('/plants/{id}', { params: { path: { id }, header: { 'If-Match': base?.etag ?? '*' } } });
    if (response.ok) setDeleted(true);
    else setProblem(messageOf(error, response));
    setConfirming(false);
  }

  if (deleted) {
    return (
      <main>
        <h1>Plant {String(id)}</h1>
        <p role="status">Deleted.</p>
        <a href="#plants">Back to plants</a>
      </main>
    );
  }
  return (
    <main>
      <h1>Plant {String(id)}</h1>
      <a href="#plants">Back to plants</a>
      {problem && <p role="alert">{problem}</p>}
      {shown && !writes && (
        <dl class="facts">
          <dt>Name</dt>
          <dd>{shown.name}</dd>
          <dt>Tag</dt>
          <dd>{shown.tag || 'none'}</dd>
        </dl>
      )}
      {shown && writes && (
        <form onSubmit={save} aria-label="Edit plant" class="new-plant">
          <NameAndTag name={name} tag={tag} onName={setName} onTag={setTag} />
          <button type="submit">{newer ? 'Apply my change again' : 'Save'}</button>
        </form>
      )}
      {notice && <p role="status">{notice}</p>}
      {newer && (
        <section aria-label="Changed meanwhile" class="conflict">
          <h2>Changed meanwhile</h2>
          <p>Someone changed this plant after you opened it. Nothing of yours was saved.</p>
          <dl>
            <dt>Now</dt>
            <dd>
              {newer.name} {newer.tag && `(${newer.tag})`}
            </dd>
            <dt>Your change</dt>
            <dd>
              {name} {tag && `(${tag})`}
            </dd>
          </dl>
        </section>
      )}
      {shown && writes && !confirming && (
        <button type="button" onClick={() => setConfirming(true)}>
          Delete
        </button>
      )}
      {confirming && (
        <Confirm label="Confirm delete" question={`Delete plant ${String(id)}?`} yes="Yes, delete it" onYes={remove} onCancel={() => setConfirming(false)} />
      )}
    </main>
  );
}
