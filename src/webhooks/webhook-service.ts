// Webhook subscription rules: what URL may be subscribed (shape, scheme, no credentials, the SSRF guard),
// the secret shown once, which deliveries may be sent again by hand (one, or all those a receiver missed
// since a time), and re-enabling a disabled subscription. Used by the HTTP handlers and the CLI.
import { randomBytes } from 'node:crypto';
import { AppError } from '../errors/catalogue.js';
import { WEBHOOK_FORMATS, type DeliveryRecord, type DeliveryStatus, type RequeueResult, type SubscriptionRefusal, type WebhookFormat, type WebhookStore, type WebhookSubscription } from './delivery.js';
import { EVENT_TYPES } from '../events/event.js';
import { generateWebhookSecret } from './signing.js';
import { checkWebhookUrl } from './ssrf-guard.js';
import { systemClock, type Clock } from '../kit/clock.js';

/** Limits of the OpenAPI document's NewWebhook, applied here too so the CLI gets the same rules. */
export const MAX_URL_LENGTH = 2048;
export const MAX_DESCRIPTION_LENGTH = 500;
export const MAX_DELIVERIES_PAGE = 1000;

/**
 * What a recover sends again: deliveries that failed for good, and those cancelled when their subscription
 * was disabled (410 Gone, a refused address), which were never given the rest of their round. Deleting a
 * subscription cancels too, but a deleted subscription has nothing left to recover.
 */
export const RECOVERABLE_STATUSES: readonly DeliveryStatus[] = ['failed', 'cancelled'];
/**
 * Deliveries one recover queues at most, however long the receiver was down: one statement's work (10 000
 * of 20 000 failed ones took about 50 ms on SQLite, which holds the event loop meanwhile, and 0.4 s on
 * PostgreSQL, on a 2-core machine). The answer says when more remain; the same call again queues the next.
 */
export const MAX_RECOVER_PER_CALL = 10_000;

export interface NewWebhookInput {
  url: string;
  description?: string;
  /** Event types to deliver; all of them when absent. */
  events?: readonly string[];
  /** The body deliveries carry; plain when absent. */
  format?: string;
}

export interface WebhookService {
  /** Subscribes a URL; the secret is returned only here (it is stored, because signing needs it). */
  create(input: NewWebhookInput): Promise<{ subscription: WebhookSubscription; secret: string }>;
  /** Every subscription, oldest first. */
  list(): Promise<WebhookSubscription[]>;
  get(id: string): Promise<WebhookSubscription>;
  /** Deletes a subscription; its pending deliveries are cancelled. */
  remove(id: string): Promise<void>;
  /** Deliveries of a subscription, newest first, with their attempts. */
  deliveries(id: string, limit: number): Promise<DeliveryRecord[]>;
  /**
   * Makes a delivery of an active subscription due now: a failed or cancelled one for another round of
   * attempts, a pending one waiting for its next attempt at once.
   */
  retry(id: string, deliveryId: string): Promise<DeliveryRecord>;
  /**
   * Queues again the RECOVERABLE_STATUSES deliveries of an active subscription created at or after `since`
   * (an RFC 3339 date-time, not in the future), oldest first and at most MAX_RECOVER_PER_CALL: each gets a
   * new round of attempts, the first due now, with the webhook-id it always had.
   */
  recover(id: string, since: string): Promise<RequeueResult>;
  /** Re-enables a disabled subscription, keeping its URL and secret. */
  enable(id: string): Promise<WebhookSubscription>;
}

export interface WebhookServiceOptions {
  /** Hosts the SSRF guard lets through although they resolve to loopback or private addresses. */
  allowedHosts: readonly string[];
  /** The time subscriptions are created at and manual retries are due at. */
  clock?: Clock;
  /** Called after a delivery was made due again, so that the dispatcher (here, or the shared writer's) looks at once. */
  onDue?: () => void;
  /** Subscriptions the store may hold in all (WEBHOOK_MAX_SUBSCRIPTIONS); a new one beyond it is refused. */
  maxSubscriptions?: number;
}

/** The default of WEBHOOK_MAX_SUBSCRIPTIONS. */
export const DEFAULT_MAX_SUBSCRIPTIONS = 100;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * An RFC 3339 date-time (section 5.6) as the instant it names, or undefined when it is not one. Stricter
 * than Date.parse, which reads a missing offset as local time and rolls 30 February over into March. A leap
 * second (:60) is read as the end of the second before it.
 */
export function parseRfc3339(text: string): Date | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const offsetH = m[9] === undefined ? 0 : Number(m[10]);
  const offsetM = m[9] === undefined ? 0 : Number(m[11]);
  const daysInMonth = [31, isLeapYear(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
  if (day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 60 || offsetH > 23 || offsetM > 59) {
    return undefined;
  }
  const at = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0 to 99 as 1900 to 1999.
  at.setUTCFullYear(year, month - 1, day);
  at.setUTCHours(hour, minute, Math.min(second, 59), second === 60 ? 999 : Number((m[7] ?? '').padEnd(3, '0').slice(0, 3)));
  const offsetMs = (offsetH * 60 + offsetM) * 60_000 * (m[9] === '-' ? -1 : 1);
  return new Date(at.getTime() - offsetMs);
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** The event types asked for, checked, each once, in EVENT_TYPES order (so equal sets are equal lists). */
function chosenEvents(events: readonly string[] | undefined): string[] {
  if (events === undefined) return [...EVENT_TYPES];
  if (!Array.isArray(events) || events.length === 0) throw new AppError('BODY_INVALID', `events must list at least one of ${EVENT_TYPES.join(', ')}.`);
  for (const e of events) {
    if (!(EVENT_TYPES as readonly string[]).includes(e)) {
      throw new AppError('BODY_INVALID', `events: ${JSON.stringify(String(e)).slice(0, 80)} is not an event type; the types are ${EVENT_TYPES.join(', ')}.`);
    }
  }
  if (new Set(events).size !== events.length) throw new AppError('BODY_INVALID', 'events must name each event type once.');
  return EVENT_TYPES.filter((t) => events.includes(t));
}

function chosenFormat(format: string | undefined): WebhookFormat {
  if (format === undefined) return 'plain';
  if (!(WEBHOOK_FORMATS as readonly string[]).includes(format)) {
    throw new AppError('BODY_INVALID', `format: ${JSON.stringify(String(format)).slice(0, 40)} is not a format; the formats are ${WEBHOOK_FORMATS.join(', ')}.`);
  }
  return format as WebhookFormat;
}

/**
 * The subscription rule: one subscription per URL, set of events and format (a second would double every
 * delivery; another format is allowed, so a receiver can move to it before the old one is removed), and at
 * most `max` in all (each one adds work to every write).
 */
export function admitSubscription(sub: WebhookSubscription, existing: readonly WebhookSubscription[], max: number): SubscriptionRefusal | undefined {
  const same = existing.find((e) => e.url === sub.url && e.events.join(' ') === sub.events.join(' ') && e.format === sub.format);
  if (same) return { kind: 'duplicate', of: same.id };
  if (existing.length >= max) return { kind: 'limit', max };
  return undefined;
}

export function newWebhookId(): string {
  return 'wh_' + randomBytes(12).toString('base64url');
}

/** Syntax rules, checked before any name is resolved. Returns the URL as it will be stored and called. */
function normalizeUrl(raw: string): string {
  if (typeof raw !== 'string' || raw.length === 0) throw new AppError('WEBHOOK_URL_REJECTED', 'The webhook URL is required.');
  if (raw.length > MAX_URL_LENGTH) {
    throw new AppError('WEBHOOK_URL_REJECTED', `The webhook URL is longer than ${MAX_URL_LENGTH} characters.`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError('WEBHOOK_URL_REJECTED', 'The webhook URL is not a valid absolute URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AppError('WEBHOOK_URL_REJECTED', `The webhook URL must be http or https, not ${url.protocol.slice(0, 32)}`);
  }
  // Credentials in a URL end up in logs and listings; receivers authenticate deliveries by the signature.
  if (url.username !== '' || url.password !== '') {
    throw new AppError('WEBHOOK_URL_REJECTED', 'The webhook URL must not contain credentials (user:password@); deliveries are signed instead.');
  }
  if (url.hostname === '') throw new AppError('WEBHOOK_URL_REJECTED', 'The webhook URL has no host.');
  // A fragment is never sent; dropping it keeps the stored URL what is actually called.
  url.hash = '';
  const href = url.href;
  if (href.length > MAX_URL_LENGTH) {
    throw new AppError('WEBHOOK_URL_REJECTED', `The webhook URL is longer than ${MAX_URL_LENGTH} characters once normalized.`);
  }
  return href;
}

function checkDescription(description: string | undefined): string | null {
  if (description === undefined) return null;
  if (typeof description !== 'string') throw new AppError('BODY_INVALID', 'description must be a string.');
  if (description.length > MAX_DESCRIPTION_LENGTH) {
    throw new AppError('BODY_INVALID', `description must NOT have more than ${MAX_DESCRIPTION_LENGTH} characters.`);
  }
  // A lone surrogate cannot be stored as UTF-8 without changing it.
  if (!description.isWellFormed()) throw new AppError('BODY_INVALID', 'description must be well-formed Unicode (it holds an unpaired surrogate).');
  return description;
}

export function createWebhookService(store: WebhookStore, options: WebhookServiceOptions): WebhookService {
  const clock = options.clock ?? systemClock;
  const now = () => new Date(clock.now());

  async function subscription(id: string): Promise<WebhookSubscription> {
    const sub = await store.getSubscription(id);
    if (!sub) throw new AppError('WEBHOOK_NOT_FOUND', `No webhook subscription with id ${id}.`);
    return sub;
  }

  return {
    async create(input) {
      const url = normalizeUrl(input.url);
      const description = checkDescription(input.description);
      const events = chosenEvents(input.events);
      const format = chosenFormat(input.format);
      // Resolves the host: by default no loopback, private, link-local or metadata address is accepted.
      await checkWebhookUrl(url, options.allowedHosts);
      const secret = generateWebhookSecret();
      const sub: WebhookSubscription = {
        id: newWebhookId(),
        url,
        description,
        events,
        format,
        secret,
        createdAt: now(),
        disabledAt: null,
        disabledReason: null,
      };
      const max = options.maxSubscriptions ?? DEFAULT_MAX_SUBSCRIPTIONS;
      const refusal = await store.insertSubscription(sub, (existing) => admitSubscription(sub, existing, max));
      if (refusal?.kind === 'duplicate') {
        throw new AppError('WEBHOOK_DUPLICATE', `Subscription ${refusal.of} already delivers these events to this URL in this format; nothing was added.`);
      }
      if (refusal?.kind === 'limit') {
        throw new AppError('WEBHOOK_LIMIT', `There are already ${refusal.max} webhook subscriptions (WEBHOOK_MAX_SUBSCRIPTIONS); delete one first.`);
      }
      return { subscription: sub, secret };
    },

    async list() {
      const subs = await store.listSubscriptions();
      // Oldest first, as documented. The sort is stable: subscriptions made in the same millisecond keep the
      // store's (insertion) order rather than the order of their random ids.
      return [...subs].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    },

    get: subscription,

    async remove(id) {
      if (!(await store.deleteSubscription(id))) throw new AppError('WEBHOOK_NOT_FOUND', `No webhook subscription with id ${id}.`);
    },

    async deliveries(id, limit) {
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_DELIVERIES_PAGE) {
        throw new AppError('BAD_REQUEST', `limit must be an integer from 1 to ${MAX_DELIVERIES_PAGE}.`);
      }
      await subscription(id);
      return store.listDeliveries(id, limit);
    },

    async retry(id, deliveryId) {
      const sub = await subscription(id);
      const delivery = await store.getDelivery(id, deliveryId);
      if (!delivery) throw new AppError('DELIVERY_NOT_FOUND', `No delivery ${deliveryId} to webhook subscription ${id}.`);
      if (sub.disabledAt !== null) {
        throw new AppError(
          'DELIVERY_NOT_RETRYABLE',
          `Webhook subscription ${id} is disabled${sub.disabledReason ? ` (${sub.disabledReason})` : ''}. ` +
            `Re-enable it first with \`npx plant-store webhook enable ${id}\`.`,
        );
      }
      // The store re-checks the state in its own transaction: a concurrent retry, or a dispatcher that holds
      // the delivery for an attempt, wins there.
      if (!(await store.retryDelivery(id, deliveryId, now()))) {
        const current = await store.getDelivery(id, deliveryId);
        if (!current) throw new AppError('DELIVERY_NOT_FOUND', `No delivery ${deliveryId} to webhook subscription ${id}.`);
        throw new AppError('DELIVERY_NOT_RETRYABLE', `Delivery ${deliveryId} is being sent at this moment; see its attempts in a few seconds.`);
      }
      options.onDue?.();
      const updated = await store.getDelivery(id, deliveryId);
      if (!updated) throw new AppError('DELIVERY_NOT_FOUND', `No delivery ${deliveryId} to webhook subscription ${id}.`);
      return updated;
    },

    async recover(id, since) {
      const at = now();
      const from = typeof since === 'string' ? parseRfc3339(since) : undefined;
      if (from === undefined) {
        throw new AppError('BODY_INVALID', `\`since\` must be an RFC 3339 date-time with an offset, such as 2026-03-14T09:00:00Z; got ${JSON.stringify(String(since)).slice(0, 80)}.`);
      }
      if (from.getTime() > at.getTime()) {
        throw new AppError('BODY_INVALID', `\`since\` (${from.toISOString()}) is in the future (it is ${at.toISOString()} here); no delivery was made after it.`);
      }
      const sub = await subscription(id);
      const disabled = (s: WebhookSubscription) =>
        new AppError(
          'DELIVERY_NOT_RETRYABLE',
          `Webhook subscription ${id} is disabled${s.disabledReason ? ` (${s.disabledReason})` : ''}, so nothing was queued. ` +
            `Re-enable it first with \`npx plant-store webhook enable ${id}\`, then recover.`,
        );
      if (sub.disabledAt !== null) throw disabled(sub);
      const result = await store.requeueDeliveries({
        subscriptionId: id,
        statuses: RECOVERABLE_STATUSES,
        // No delivery is older than 1970; the year 0000, which RFC 3339 allows, is one PostgreSQL refuses.
        createdSince: new Date(Math.max(from.getTime(), 0)),
        limit: MAX_RECOVER_PER_CALL,
        dueAt: at,
      });
      if (result.queued > 0) {
        options.onDue?.();
      } else if (result.more) {
        // The store takes nothing from a subscription that is not active: it was disabled or deleted meanwhile.
        const current = await subscription(id);
        if (current.disabledAt !== null) throw disabled(current);
      }
      return result;
    },

    async enable(id) {
      const sub = await subscription(id);
      if (sub.disabledAt === null) throw new AppError('WEBHOOK_NOT_DISABLED', `Webhook subscription ${id} is already enabled.`);
      // False only when it was deleted or enabled meanwhile: what the caller sees is read again below.
      await store.enableSubscription(id);
      const updated = await subscription(id);
      options.onDue?.();
      return updated;
    },
  };
}
