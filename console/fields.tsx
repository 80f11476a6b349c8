// A plant's name and tag as a form edits them: the new plant's form and a plant's page share these two fields.
export function NameAndTag(props: { name: string; tag: string; onName: (v: string) => void; onTag: (v: string) => void }) {
  return (
    <>
      <label>
        Name
        <input value={props.name} onInput={(e) => props.onName(e.currentTarget.value)} required />
      </label>
      <label>
        Tag
        <input value={props.tag} onInput={(e) => props.onTag(e.currentTarget.value)} />
      </label>
    </>
  );
}
