// `plant-store secrets status|rotate`: where the webhook signing secrets stand (which key of
// WEBHOOK_SECRET_KEYS each is encrypted under), and the explicit re-encryption under the first key that
// `serve` also does at start-up. No other command re-encrypts (see open-store.ts: resealSecrets).
import { type Config, storeOptions } from '../config.js';
import type { WebhookSubscription } from '../webhooks/delivery.js';
import { sealedUnder } from '../webhooks/secret-box.js';
import { runningServers } from '../storage/open-store.js';
import { describeDatabase, openCommandStore } from './database.js';
import { COMMAND, commandArgs, UsageError } from './subcommand.js';

export const SECRETS_HELP = `Usage: plant-store secrets <status|rotate>

  secrets status
      Counts the webhook signing secrets by the key each is encrypted under: every key of
      WEBHOOK_SECRET_KEYS (by its id, as plant-store config shows it; the first encrypts, the others
      only decrypt), any key not listed there (naming its subscriptions), and secrets stored in clear.
      Changes nothing. Exits 1 when a secret needs a key WEBHOOK_SECRET_KEYS does not hold.
  secrets rotate [--force]
      Encrypts again under the first key of WEBHOOK_SECRET_KEYS every secret not under it (in clear or
      under an older key), prints how many, then the status. When a secret needs a key that is not
      listed it changes nothing and exits 1. serve does the same at start-up.
      While a server runs on the store without that key (its deliveries would fail until it restarts
      with it), it changes nothing, names the server and exits 1; --force rotates all the same.

Only serve and secrets rotate re-encrypt; every other command leaves the secrets as stored, so a
command run with a new key first cannot move them away from a server still running with the old keys.
A key may leave WEBHOOK_SECRET_KEYS once secrets status counts 0 under it. Rotating the key of several
instances without stopping deliveries: docs/operations.md, "Rotating the key of webhook secrets".
`;

const SUBCOMMANDS = ['status', 'rotate'];

export async function secretsCommand(args: string[], config: Config): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || !SUBCOMMANDS.includes(sub)) throw new UsageError(`Unknown command "secrets ${sub ?? ''}": use secrets status or rotate.`, 'secrets');
  const parsed = commandArgs(`secrets ${sub}`, rest, { force: { type: 'boolean' } }, SECRETS_HELP);
  if (!parsed) return 0;
  if (parsed.positionals.length > 0) throw new UsageError(`Unexpected argument "${parsed.positionals[0]}" for "secrets ${sub}".`, `secrets ${sub}`);
  if (sub !== 'rotate' && parsed.values.force) throw new UsageError('--force is an option of "secrets rotate" only.', `secrets ${sub}`);
  const first = config.webhookSecretKeys[0];
  if (sub === 'rotate' && !first) {
    throw new Error('WEBHOOK_SECRET_KEYS is not set, so there is no key to encrypt under. Make one with openssl rand -base64 32 and give it to the server and the CLI alike.');
  }

  if (sub === 'rotate' && !parsed.values.force) await refuseBesideServersLacking(first!.id, config);

  // rotate: the open re-encrypts (all or nothing: a secret whose key is missing stops it before any change).
  const { store, secrets } = await openCommandStore(config, { create: false, resealSecrets: sub === 'rotate' });
  try {
    if (sub === 'rotate') {
      process.stdout.write(
        `Encrypted ${secrets.resealed} webhook signing secret${secrets.resealed === 1 ? '' : 's'} again under key ${first!.id} (the first of WEBHOOK_SECRET_KEYS).\n`,
      );
    }
    const report = secretsReport(await store.webhooks.listSubscriptions(), config);
    process.stdout.write(report.text);
    return report.missing ? 1 : 0;
  } finally {
    await store.close();
  }
}

/**
 * Refuses to rotate while a server runs on the store without the new first key: it could no longer open what
 * this encrypts, and its deliveries would fail until it restarts with the key (docs/operations.md's order).
 */
async function refuseBesideServersLacking(keyId: string, config: Config): Promise<void> {
  const lacking = (await runningServers(config.databaseUrl, storeOptions(config))).filter((s) => !s.keyIds?.includes(keyId));
  if (lacking.length === 0) return;
  const which = lacking.map((s) => `${s.where} (${s.keyIds === undefined ? 'its keys unknown' : s.keyIds.length === 0 ? 'no keys' : `keys ${s.keyIds.join(', ')}`})`);
  throw new Error(
    `Nothing was encrypted: ${describeDatabase(config.databaseUrl)} is in use by ${lacking.length === 1 ? 'a server' : `${lacking.length} servers`} without key ${keyId}, ` +
      `the first of WEBHOOK_SECRET_KEYS: ${which.join('; ')}. Secrets encrypted under it now could not sign there, and those deliveries would fail until a restart. ` +
      `Rotate in this order: add the new key last on every server (WEBHOOK_SECRET_KEYS=OLD,NEW) and restart each; then put it first (NEW,OLD) and restart each, ` +
      `which encrypts again at start-up; then run secrets rotate. Or stop the servers first; --force rotates all the same (docs/operations.md, "Rotating the key of webhook secrets").`,
  );
}

/** The status lines, and whether a secret needs a key that is not listed. */
function secretsReport(subs: readonly WebhookSubscription[], config: Config): { text: string; missing: boolean } {
  const keys = config.webhookSecretKeys;
  const byKey = new Map<string | null, string[]>();
  // Listed subscriptions carry their secret as stored (secret-box.ts): nothing is decrypted here.
  for (const s of subs) {
    const id = sealedUnder(s.secret);
    byKey.set(id, [...(byKey.get(id) ?? []), s.id]);
  }
  const count = (id: string | null) => byKey.get(id)?.length ?? 0;
  const lines = [`Webhook signing secrets: ${subs.length}${keys.length === 0 ? ' (WEBHOOK_SECRET_KEYS is not set: new ones are stored in clear)' : ''}.`];
  keys.forEach((k, i) => lines.push(`  key ${i + 1} of ${keys.length}, ${k.id} (${i === 0 ? 'encrypts' : 'decrypts only'}): ${count(k.id)}`));
  const listed = new Set(keys.map((k) => k.id));
  let missing = false;
  for (const [id, ids] of byKey) {
    if (id === null || listed.has(id)) continue;
    missing = true;
    lines.push(`  key ${id}, NOT in WEBHOOK_SECRET_KEYS: ${ids.length} (${ids.join(', ')}); their deliveries fail until it is added`);
  }
  lines.push(`  in clear: ${count(null)}${count(null) > 0 && keys.length > 0 ? ` (encrypt them with ${COMMAND} secrets rotate)` : ''}`);
  return { text: lines.join('\n') + '\n', missing };
}
