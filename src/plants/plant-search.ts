// Search by name (the list's `q`) and the name order: the one folding both engines compare and order with. A
// plant's folded name is computed here when it is written and stored beside the name (each engine indexes it by
// trigrams, and the name order reads it first); a `q` is folded the same way, so the engines agree on every
// match whatever their own case rules (SQLite's are ASCII only, PostgreSQL's follow the database's locale).

/**
 * The name as it is compared and first ordered: compatibility decomposition (NFKD: `ﬁ` is `fi`, `Ｆ` is `F`,
 * `①` is `1`), every combining mark (\p{M}) removed (`É` is `E`), then case folded as JavaScript's full case
 * mappings give it, upper then lower case (`SS` and `ß` are `ss`), with the two lower-case results that Unicode
 * case folding maps further mapped too: `ß` (from `ẞ`, whose upper case is itself) to `ss`, and final `ς` (which
 * toLowerCase writes at the end of a word, so a `q` that ends inside a word would not be found) to `σ`. Checked
 * over every code point: the result folds to itself and holds no mark.
 */
export function foldName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toUpperCase()
    .toLowerCase()
    .replace(/[ßς]/g, (c) => (c === 'ß' ? 'ss' : 'σ'));
}

/**
 * The fewest characters (code points) a `q` may have: the indexes hold each name's three-character pieces
 * (trigrams), so a shorter text could only be found by reading every name.
 */
export const SEARCH_MIN_LENGTH = 3;

/**
 * Why a `q` cannot be searched for, or undefined. U+0000: SQLite's full-text query parser ends its text there
 * (the search failed with 503 and an error log), so a `q` holding one is refused the same way on every engine,
 * as the client's mistake; a name may hold U+0000, but no search finds it by that character. Fewer than
 * SEARCH_MIN_LENGTH characters once folded (combining marks removed): the trigram indexes cannot answer it.
 */
export function searchTextProblem(q: string): string | undefined {
  if (q.includes('\u0000')) return 'q must not contain U+0000 (NUL): the name search cannot look for it.';
  const folded = foldName(q);
  if ([...folded].length < SEARCH_MIN_LENGTH) {
    return `q must hold at least ${SEARCH_MIN_LENGTH} characters once folded (combining marks removed, case folded): ${JSON.stringify(q)} folds to ${JSON.stringify(folded)}.`;
  }
  return undefined;
}
