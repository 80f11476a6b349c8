// `plant-store token create|list|revoke`: manages tokens in the same database the server reads (named on
// stderr; never created here, see database.ts). A running server sees changes within TOKEN_CACHE_TTL_MS.
import type { Config } from '../config.js';
import { createTokenService } from '../auth/token-service.js';
import { parseExpiry, parseScopes, SCOPES } from '../auth/tokens.js';
import { openCommandStore } from './database.js';
import { COMMAND, sentence, subcommandArgs, UsageError } from './subcommand.js';

export const TOKEN_HELP = `Usage: plant-store token <create|list|revoke> [options]

  token create --scopes SCOPES --name NAME [--expires WHEN]
      Creates a token and prints it alone on the last line of stdout. It is shown once: only its
      SHA-256 hash is stored. SCOPES is a comma-separated list of ${SCOPES.join(', ')}.
      WHEN is a duration (30d, 12h, 90m, 2w, 1y), an ISO 8601 date (2031-01-31, midnight UTC) or
      date-time with a zone (2031-01-31T12:00:00Z); default: never expires.
  token list [--json]
      Lists tokens (id, name, scopes, created, last used, expires, revoked); never the secrets.
  token revoke ID
      Revokes a token; a running server rejects it within a few seconds.

Every subcommand works on the database at DATABASE_URL (named on stderr) and refuses to create one:
create it with plant-store migrate, or start the server once.
`;

const SUB_HELP: Record<string, string> = { create: TOKEN_HELP, list: TOKEN_HELP, revoke: TOKEN_HELP };

/** The options each subcommand takes; any other is a usage error rather than silently ignored. */
const SUB_OPTIONS: Record<string, string[]> = { create: ['scopes', 'name', 'expires'], list: ['json'], revoke: [] };

/** Names are shown in one-line table cells: no control characters (a newline would forge table rows). */
const NAME = /^[^\p{Cc}]{1,200}$/u;

export async function tokenCommand(args: string[], config: Config): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || !(sub in SUB_HELP)) throw new UsageError(`Unknown command "token ${sub ?? ''}": use token create, list or revoke.`, 'token');
  const parsed = subcommandArgs(
    `token ${sub}`,
    rest,
    { scopes: { type: 'string' }, name: { type: 'string' }, expires: { type: 'string' }, json: { type: 'boolean' } },
    SUB_OPTIONS[sub]!,
    SUB_HELP[sub]!,
  );
  if (!parsed) return 0;
  const { values, positionals } = parsed;
  let create: { name: string; scopes: ReturnType<typeof parseScopes>; expiresAt: Date | null } | undefined;
  if (sub === 'create') {
    const usage = (message: string) => new UsageError(message, 'token create');
    if (!values.scopes) throw usage('Token create needs --scopes (for example --scopes plants:read,plants:write).');
    if (!values.name || values.name.trim() === '') throw usage('Token create needs --name NAME.');
    if (!NAME.test(values.name.trim())) throw usage('The --name must be 1 to 200 characters without control characters.');
    if (positionals.length > 0) throw usage(`Unexpected argument "${positionals[0]}" for "token create".`);
    try {
      create = {
        name: values.name.trim(),
        scopes: parseScopes(values.scopes),
        expiresAt: values.expires ? parseExpiry(values.expires, new Date()) : null,
      };
    } catch (err) {
      throw usage(sentence((err as Error).message));
    }
  }
  if (sub === 'revoke' && positionals.length !== 1) throw new UsageError('Token revoke takes one token id (see token list).', 'token revoke');
  if (sub === 'list' && positionals.length > 0) throw new UsageError(`Unexpected argument "${positionals[0]}" for "token list".`, 'token list');

  const { store } = await openCommandStore(config, { create: false });
  try {
    const tokens = createTokenService(store, { cacheTtlMs: 0 });
    if (create) {
      const { token, secret } = await tokens.create(create);
      process.stdout.write(
        `Created token ${token.id} "${token.name}" with scopes ${token.scopes.join(' ')}` +
          `${token.expiresAt ? `, expiring ${token.expiresAt.toISOString()}` : ''}. It is shown only now:\n${secret}\n`,
      );
      return 0;
    }
    if (sub === 'list') {
      const list = await tokens.list();
      const rows = list.map((t) => ({
        id: t.id,
        name: t.name,
        scopes: t.scopes.join(' '),
        created: t.createdAt.toISOString(),
        lastUsed: t.lastUsedAt?.toISOString() ?? null,
        expires: t.expiresAt?.toISOString() ?? null,
        revoked: t.revokedAt?.toISOString() ?? null,
      }));
      if (values.json) {
        process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
      } else if (rows.length === 0) {
        process.stdout.write(`No tokens. Create one with: ${COMMAND} token create --scopes plants:read,plants:write --name NAME\n`);
      } else {
        const header = ['ID', 'NAME', 'SCOPES', 'CREATED', 'LAST USED', 'EXPIRES', 'REVOKED'];
        const table = [header, ...rows.map((r) => [r.id, r.name, r.scopes, r.created, r.lastUsed ?? '-', r.expires ?? '-', r.revoked ?? '-'])];
        const widths = header.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
        process.stdout.write(table.map((row) => row.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n');
      }
      return 0;
    }
    const id = positionals[0]!;
    if (await tokens.revoke(id)) {
      process.stdout.write(`Revoked token ${id}.\n`);
      return 0;
    }
    process.stderr.write(`plant-store: There is no active token with id ${id}; see ${COMMAND} token list.\n`);
    return 1;
  } finally {
    await store.close();
  }
}
