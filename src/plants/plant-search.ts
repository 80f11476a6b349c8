// Search by name (the list's `q`): the one folding both engines compare with. A plant's folded name is computed
// here when it is written and stored beside the name (each engine indexes it by trigrams); a `q` is folded the
// same way, so the engines agree on every match whatever their own case rules (SQLite's are ASCII only,
// PostgreSQL's follow the database's locale).

/**
 * The name as it is compared: Unicode full case folding as JavaScript's case mappings give it (upper then lower:
 * `ß` and `SS` both become `ss`, final `ς` becomes `σ`, `É` becomes `é`).
 */
export function foldName(name: string): string {
  return name.toUpperCase().toLowerCase();
}

/**
 * The fewest characters (code points) a `q` may have: the indexes hold each name's three-character pieces
 * (trigrams), so a shorter text could only be found by reading every name.
 */
export const SEARCH_MIN_LENGTH = 3;

/**
 * Why a `q` cannot be searched for, or undefined. U+0000: SQLite's full-text query parser ends its text there
 * (the search failed with 503 and an error log), so a `q` holding one is refused the same way on every engine,
 * as the client's mistake; a name may hold U+0000, but no search finds it by that character.
 */
export function searchTextProblem(q: string): string | undefined {
  return q.includes('\u0000') ? 'q must not contain U+0000 (NUL): the name search cannot look for it.' : undefined;
}
