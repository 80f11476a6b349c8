// The API token of this tab: in sessionStorage (gone with the tab, never in the address or localStorage), and a
// typed client that sends it. Every API call of the console goes through that client.
import { createPlantStoreClient, type PlantStoreClient } from '@plant-store/client';

const KEY = 'plant-store-console-token';

export function storedToken(): string | undefined {
  return sessionStorage.getItem(KEY) ?? undefined;
}

export function keepToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}

export function clientFor(token: string): PlantStoreClient {
  return createPlantStoreClient({ baseUrl: location.origin, token });
}

/** The message of an API refusal, as the service wrote it; a network failure's own words otherwise. */
export function messageOf(error: unknown, response?: Response): string {
  const body = error as { message?: unknown } | undefined;
  if (body && typeof body.message === 'string') return body.message;
  return response ? `The service answered ${response.status}.` : String(error);
}

/** What the signed-in token is, as GET /tokens/current says: its scopes, or why it could not be read. */
export type Current = { scopes: readonly string[] } | { problem: string };

export async function currentToken(client: PlantStoreClient): Promise<Current> {
  try {
    const { data, error, response } = await client.GET('/tokens/current');
    return data ? { scopes: data.scopes } : { problem: messageOf(error, response) };
  } catch (err) {
    return { problem: messageOf(err) };
  }
}
