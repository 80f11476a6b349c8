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
