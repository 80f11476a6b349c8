// Webhook pieces the delivery tests share: a subscription written straight into a store or made through the
// API, startApp with the delivery tests' defaults (a dispatcher the test drives, or lets run in the background),
// and reading a subscription's deliveries back. The receiver is test/helpers/receiver.ts.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { TestContext } from 'node:test';
import type { NewWebhook, PlantStoreClient } from '@plant-store/client';
import { EVENT_TYPES } from '../../src/events/event.js';
import type { Config } from '../../src/config.js';
import type { DeliveryRecord, WebhookFormat, WebhookSubscription } from '../../src/webhooks/delivery.js';
import type { Store } from '../../src/storage/store.js';
import type { DispatcherOptions } from '../../src/webhooks/dispatcher.js';
import { generateWebhookSecret } from '../../src/webhooks/signing.js';
import { startApp, type TestApp } from './app.js';
import { answered, postRaw } from './raw-request.js';
import { startReceiver, type Receiver } from './receiver.js';

export async function addSubscription(
  store: Store,
  url: string,
  id = 'wh_' + Math.random().toString(36).slice(2),
  events: string[] = [...EVENT_TYPES],
  format: WebhookFormat = 'plain',
): Promise<WebhookSubscription> {
  const sub: WebhookSubscription = {
    id,
    url,
    description: null,
    events,
    format,
    secret: generateWebhookSecret(),
    createdAt: new Date(),
    disabledAt: null,
    disabledReason: null,
  };
  await store.webhooks.insertSubscription(sub, () => undefined);
  return sub;
}

/** A URL to subscribe, or a receiver's hook: its `secret` becomes the subscription's, which the receiver verifies with. */
export type Subscriber = string | { url: string; secret: string };

/**
 * POST /webhooks through `client` (with a webhooks:manage token) for `to` and the other `fields`; it must answer
 * 201. The new subscription's id and secret.
 */
export async function subscribe(client: PlantStoreClient, to: Subscriber, fields: Omit<NewWebhook, 'url'> = {}): Promise<{ id: string; secret: string }> {
  const { data, error, response } = await client.POST('/webhooks', { body: { url: typeof to === 'string' ? to : to.url, ...fields } });
  assert.equal(response.status, 201, JSON.stringify(error));
  if (typeof to !== 'string') to.secret = data!.secret;
  return data!;
}

/** A receiver subscribed through `client` with `fields`, verifying each delivery with the secret the answer gave. */
export async function subscribedReceiver(t: TestContext, client: PlantStoreClient, fields: Omit<NewWebhook, 'url'> = {}): Promise<{ id: string; rx: Receiver }> {
  const hook = { url: '', secret: '' };
  const rx = await startReceiver(t, () => hook.secret);
  hook.url = rx.url;
  return { id: (await subscribe(client, hook, fields)).id, rx };
}

/** POST /webhooks on `s` with `body`, as a new token with webhooks:manage and plants:read: the answer, whatever it is. */
export async function postSubscription(s: TestApp, body: Record<string, unknown>): Promise<Response> {
  const manage = await s.tokens.create({ name: 'hooks', scopes: ['webhooks:manage', 'plants:read'] });
  return fetch(`${s.url}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${manage.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

export interface DeliveryApp extends TestApp {
  /** POST /plants with a JSON text (ids beyond 2^53 stay exact) and a plants:write token; resolves with the status. */
  postJson(json: string): Promise<number>;
}

/**
 * startApp with the delivery tests' defaults: receivers on 127.0.0.1 allowed, the dispatcher polling every
 * 200 ms and, unless `background`, run only when the test calls `s.dispatcher.runOnce()` (fake-clock friendly);
 * `dispatcher` options are merged over those.
 */
export async function startDeliveryApp(
  t: TestContext,
  options: { background?: boolean; config?: Partial<Config>; dispatcher?: Partial<DispatcherOptions>; databaseUrl?: string } = {},
): Promise<DeliveryApp> {
  const s = await startApp(t, {
    ...(options.databaseUrl !== undefined && { databaseUrl: options.databaseUrl }),
    config: { webhookAllowedHosts: ['127.0.0.1'], ...options.config },
    dispatcher: { pollMs: 200, ...options.dispatcher },
    backgroundDispatcher: options.background ?? false,
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  t.after(() => agent.destroy());
  return { ...s, postJson: async (json) => answered(await postRaw(s.port, s.token.write, json, { agent })).status };
}

export async function deliveriesOf(store: Store, subscriptionId: string): Promise<DeliveryRecord[]> {
  return store.webhooks.listDeliveries(subscriptionId, 10_000);
}

/** The only delivery of a subscription. */
export async function onlyDelivery(store: Store, subscriptionId: string): Promise<DeliveryRecord> {
  const all = await deliveriesOf(store, subscriptionId);
  if (all.length !== 1) throw new Error(`expected one delivery, found ${all.length}`);
  return all[0]!;
}

/**
 * An event body without its trailing `"version"` member (asserting it is there, digits only): what the body
 * says of the plant, to compare byte for byte whatever version the write took.
 */
export function withoutVersion(body: string): string {
  const m = /,"version":(\d+)\}$/.exec(body);
  if (!m) throw new Error(`an event body without a version: ${body}`);
  return body.slice(0, m.index) + '}';
}
