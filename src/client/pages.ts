// GET /plants page by page: the next page's query read from the answer's Link header, and every plant of a query.
import type { operations } from '../contract/schema.js';
import { PlantStoreError, type ErrorBody, type NewPlant, type PlantStoreClient } from './client.js';

/**
 * The query of the `Link: <...>; rel="next"` URL of a GET /plants answer (RFC 8288), ready to pass as
 * `params.query` for the next page; undefined on the last page.
 */
export function nextPlantsPage(response: Response): operations['listPlants']['parameters']['query'] | undefined {
  const link = response.headers.get('link');
  if (!link) return undefined;
  for (const part of link.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (!m || !/;\s*rel\s*=\s*"?(?:[^";]*\s)?next(?:\s[^";]*)?"?/i.test(m[2] ?? '')) continue;
    const params = new URL(m[1] ?? '', 'http://link.invalid/').searchParams;
    const limit = params.get('limit');
    const after = params.get('after');
    const afterName = params.get('after_name');
    const tag = params.get('tag');
    const q = params.get('q');
    const sort = params.get('sort') as NonNullable<operations['listPlants']['parameters']['query']>['sort'] | null;
    return {
      ...(limit !== null && { limit: Number(limit) }),
      ...(after !== null && { after: BigInt(after) }),
      ...(afterName !== null && { after_name: afterName }),
      ...(tag !== null && { tag }),
      ...(q !== null && { q }),
      ...(sort !== null && { sort }),
    };
  }
  return undefined;
}

/**
 * Every plant the query finds (`q`, `tag`) in its order (`sort`, id by default), following the
 * `Link: rel="next"` pages of GET /plants (which carry the cursor, `after_name` too in a name order).
 * Throws PlantStoreError (with the typed Error body) when a page fails.
 */
export async function* listAllPlants(
  client: PlantStoreClient,
  query: operations['listPlants']['parameters']['query'] = {},
): AsyncGenerator<NewPlant, void, undefined> {
  let next: operations['listPlants']['parameters']['query'] | undefined = query;
  while (next) {
    const { data, error, response } = await client.GET('/plants', { params: { query: next } });
    if (data === undefined) throw new PlantStoreError(response.status, error as ErrorBody | undefined);
    yield* data;
    next = nextPlantsPage(response);
  }
}
