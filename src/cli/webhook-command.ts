// `plant-store webhook add|list|remove|deliveries|retry|recover|enable`: manages plant event subscriptions in the same database
// the server reads, through the same service as the HTTP API (so the same URL rules and SSRF guard apply).
import type { Config } from '../config.js';
import { AppError } from '../errors/catalogue.js';
import { deliveryBody, webhookBody } from '../webhooks/webhook-handlers.js';
import { createWebhookService, MAX_DELIVERIES_PAGE, MAX_RECOVER_PER_CALL } from '../webhooks/webhook-service.js';
import { allowedHostNote, WebhookAddressRefusedError } from '../webhooks/ssrf-guard.js';
import { openCommandStore } from './database.js';
import { COMMAND, subcommandArgs, UsageError } from './subcommand.js';

const ADD_HELP = `  webhook add URL [--description TEXT] [--events TYPE,...] [--format plain|envelope]
      Subscribes URL (http or https) to plant events: the TYPEs given (newPlant, plantUpdated,
      plantDeleted; default all three). --format chooses the body: plain (the default) sends the
      event's body as it is, envelope the Standard Webhooks envelope {"type", "timestamp", "data"}
      around it, so the signature covers the type; every delivery also carries the type in its
      ce-type header. Prints the subscription, then its signing
      secret (whsec_...) alone on the last line of stdout. The secret is shown only now; deliveries are
      signed with it (Standard Webhooks). By default URLs resolving to loopback, private, link-local or
      metadata addresses are refused; WEBHOOK_ALLOWED_HOSTS opens named hosts. The server that sends
      the deliveries checks again at every connect with its own WEBHOOK_ALLOWED_HOSTS: set the same
      list for both.
`;
const LIST_HELP = `  webhook list [--json]
      Lists subscriptions, oldest first (id, url, events, format, active, created, description); never
      the secrets.
`;
const REMOVE_HELP = `  webhook remove ID
      Deletes a subscription; its pending deliveries are cancelled.
`;
const DELIVERIES_HELP = `  webhook deliveries ID [--limit N] [--json]
      Lists the deliveries to a subscription, newest first (status, attempts, last answer or error,
      next attempt). N is 1 to ${MAX_DELIVERIES_PAGE}, default 100 (as the API).
`;
const RETRY_HELP = `  webhook retry ID DELIVERY_ID
      Sends a delivery now (a running server picks it up on its next poll): a failed, cancelled or
      succeeded one gets another round of attempts, with its webhook-id unchanged; a pending one waiting
      for its next attempt is made due at once. One being sent at this moment, or one of a disabled
      subscription, cannot be retried (exit 1).
`;
const RECOVER_HELP = `  webhook recover ID --since TIME
      Sends again what the receiver missed: every failed delivery of the subscription made at or after
      TIME (RFC 3339 with an offset, e.g. 2026-03-14T08:00:00Z; not in the future), and those cancelled
      when it was disabled, oldest first. Each gets a new round of attempts, due now, with its
      webhook-id unchanged; a running server picks them up on its next poll. Prints how many were
      queued. At most ${MAX_RECOVER_PER_CALL.toLocaleString('en')} per run: when more remain it says so; run it again. A disabled
      subscription is refused (exit 1): enable it first.
`;
const ENABLE_HELP = `  webhook enable ID
      Re-enables a subscription that was disabled (its receiver answered 410 Gone), keeping its URL and
      signing secret. New events are delivered to it again; its failed or cancelled deliveries stay as
      they are (send one again with webhook retry).
`;

const FOOTER = `
Every subcommand works on the database at DATABASE_URL (named on stderr) and refuses to create one:
create it with plant-store migrate, or start the server once.

Exit codes: 0 done, 1 failed (no such subscription or delivery, not retryable, no database), 2 usage
error or a URL, description or --since time that is not accepted.
`;

export const WEBHOOK_HELP =
  `Usage: plant-store webhook <add|list|remove|deliveries|retry|recover|enable> [options]\n\n` +
  ADD_HELP +
  LIST_HELP +
  REMOVE_HELP +
  DELIVERIES_HELP +
  RETRY_HELP +
  RECOVER_HELP +
  ENABLE_HELP +
  FOOTER;

const SUBCOMMANDS: Record<string, { help: string; options: string[]; positionals: string[] }> = {
  add: { help: ADD_HELP, options: ['description', 'events', 'format'], positionals: ['URL'] },
  list: { help: LIST_HELP, options: ['json'], positionals: [] },
  remove: { help: REMOVE_HELP, options: [], positionals: ['ID'] },
  deliveries: { help: DELIVERIES_HELP, options: ['json', 'limit'], positionals: ['ID'] },
  retry: { help: RETRY_HELP, options: [], positionals: ['ID', 'DELIVERY_ID'] },
  recover: { help: RECOVER_HELP, options: ['since'], positionals: ['ID'] },
  enable: { help: ENABLE_HELP, options: [], positionals: ['ID'] },
};

/** Table cells are one line: control characters (a newline would forge rows) are shown escaped. */
function cell(value: string): string {
  return value.replace(/\p{Cc}/gu, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows.map((r) => r.map(cell))];
  const widths = header.map((_, i) => Math.max(...all.map((row) => row[i]!.length)));
  return all.map((row) => row.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}

export async function webhookCommand(args: string[], config: Config): Promise<number> {
  const [sub, ...rest] = args;
  const spec = sub === undefined ? undefined : SUBCOMMANDS[sub];
  if (!sub || !spec) {
    throw new UsageError(`Unknown command "webhook ${sub ?? ''}": use webhook ${Object.keys(SUBCOMMANDS).join(', ').replace(/, (\w+)$/, ' or $1')}.`, 'webhook');
  }
  const parsed = subcommandArgs(
    `webhook ${sub}`,
    rest,
    { description: { type: 'string' }, events: { type: 'string' }, format: { type: 'string' }, json: { type: 'boolean' }, limit: { type: 'string' }, since: { type: 'string' } },
    spec.options,
    `Usage:\n${spec.help}${FOOTER}`,
  );
  if (!parsed) return 0;
  const { values, positionals } = parsed;
  const usage = (message: string) => new UsageError(message, `webhook ${sub}`);
  if (positionals.length !== spec.positionals.length) {
    const expected = spec.positionals.length === 0 ? 'no arguments' : spec.positionals.join(' ');
    throw usage(`"webhook ${sub}" takes ${expected}${positionals.length > spec.positionals.length ? `; "${positionals.at(-1)}" is one too many` : ''}.`);
  }
  if (positionals.some((p) => p.trim() === '')) throw usage(`An argument of "webhook ${sub}" is empty.`);
  let limit = 100;
  if (values.limit !== undefined) {
    if (!/^\d{1,7}$/.test(values.limit) || Number(values.limit) < 1 || Number(values.limit) > MAX_DELIVERIES_PAGE) {
      throw usage(`The --limit must be a whole number from 1 to ${MAX_DELIVERIES_PAGE}.`);
    }
    limit = Number(values.limit);
  }
  if (sub === 'recover' && values.since === undefined) throw usage('"webhook recover" needs --since TIME (RFC 3339, e.g. 2026-03-14T08:00:00Z).');

  const { store } = await openCommandStore(config, { create: false });
  try {
    const webhooks = createWebhookService(store.webhooks, { allowedHosts: config.webhookAllowedHosts, maxSubscriptions: config.webhookMaxSubscriptions });
    switch (sub) {
      case 'add': {
        const { subscription, secret } = await webhooks.create({
          url: positionals[0]!,
          ...(values.description !== undefined && { description: values.description }),
          ...(values.events !== undefined && { events: values.events.split(',').map((e) => e.trim()) }),
          ...(values.format !== undefined && { format: values.format.trim() }),
        });
        const note = allowedHostNote(subscription.url, config.webhookAllowedHosts);
        if (note) process.stderr.write(`plant-store: ${note}\n`);
        process.stdout.write(
          `Subscribed ${subscription.id} to ${subscription.events.join(', ')} events at ${subscription.url} (format ${subscription.format}).\n` +
            `Its signing secret is shown only now:\n${secret}\n`,
        );
        return 0;
      }
      case 'list': {
        const subs = (await webhooks.list()).map(webhookBody);
        if (values.json) {
          process.stdout.write(JSON.stringify(subs, null, 2) + '\n');
        } else if (subs.length === 0) {
          process.stdout.write(`No webhook subscriptions. Add one with: ${COMMAND} webhook add URL\n`);
        } else {
          process.stdout.write(
            table(
              ['ID', 'URL', 'EVENTS', 'FORMAT', 'ACTIVE', 'CREATED', 'DESCRIPTION'],
              subs.map((w) => [w.id, w.url, w.events.join(','), w.format, w.active ? 'yes' : `no (${w.disabledReason ?? 'disabled'})`, w.createdAt, w.description ?? '-']),
            ),
          );
        }
        return 0;
      }
      case 'remove':
        await webhooks.remove(positionals[0]!);
        process.stdout.write(`Removed webhook subscription ${positionals[0]}.\n`);
        return 0;
      case 'deliveries': {
        const list = (await webhooks.deliveries(positionals[0]!, limit)).map(deliveryBody);
        if (values.json) {
          process.stdout.write(JSON.stringify(list, null, 2) + '\n');
        } else if (list.length === 0) {
          process.stdout.write(`No deliveries to ${positionals[0]} yet.\n`);
        } else {
          process.stdout.write(
            table(
              ['ID', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST ANSWER', 'NEXT ATTEMPT', 'CREATED'],
              list.map((d) => {
                const last = d.attempts.at(-1);
                const answer = last === undefined ? '-' : [last.statusCode, last.error].filter((x) => x !== undefined).join(' ') || '-';
                return [d.id, d.eventId, d.status, String(d.attempts.length), answer, d.nextAttemptAt ?? '-', d.createdAt];
              }),
            ),
          );
        }
        return 0;
      }
      case 'recover': {
        const { queued, more } = await webhooks.recover(positionals[0]!, values.since!);
        process.stdout.write(
          `Queued ${queued} ${queued === 1 ? 'delivery' : 'deliveries'} of ${positionals[0]} made since ${values.since} for another round` +
            (queued > 0 ? '; a running server sends them on its next poll.\n' : ' (none failed or was cancelled since then).\n') +
            (more ? `More remain (at most ${MAX_RECOVER_PER_CALL.toLocaleString('en')} are queued at a time): run the same command again.\n` : ''),
        );
        return 0;
      }
      case 'enable': {
        const sub = await webhooks.enable(positionals[0]!);
        process.stdout.write(`Webhook subscription ${sub.id} to ${sub.url} is enabled again, with the signing secret it had.\n`);
        return 0;
      }
      default: {
        const delivery = await webhooks.retry(positionals[0]!, positionals[1]!);
        process.stdout.write(`Delivery ${delivery.id} of event ${delivery.eventId} is due now; a running server sends it on its next poll.\n`);
        return 0;
      }
    }
  } catch (err) {
    if (err instanceof AppError && err.status < 500) {
      // The operator sees what the API keeps to its log.
      process.stderr.write(`plant-store: ${err instanceof WebhookAddressRefusedError ? err.detail : err.message}\n`);
      // A URL or description the service refuses is bad input, like a usage error; not found or not retryable is a failure.
      return err.status === 400 ? 2 : 1;
    }
    throw err;
  } finally {
    await store.close();
  }
}
