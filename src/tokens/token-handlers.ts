// Tokens managed over HTTP (/tokens): the handlers of the token operations, keyed by the OpenAPI document's
// operationIds. Apart from auth/, which owns the token and its checks and which http/ builds on. A token
// made here never holds a scope its maker lacks; the audit lines name token ids, never a secret.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../kit/clock.js';
import { AppError } from '../errors/catalogue.js';
import type { OperationRequest } from '../http/contract-routes.js';
import type { ContractSchema } from '../http/contract-types.js';
import type { Principal } from '../auth/bearer-guard.js';
import type { TokenRecord } from '../auth/token.js';
import type { TokenService } from '../auth/token-service.js';
import type { Scope } from '../auth/tokens.js';

type Token = ContractSchema<'Token'>;
type TokenWithSecret = ContractSchema<'TokenWithSecret'>;
type CurrentToken = ContractSchema<'CurrentToken'>;

/** A token as the API lists it: never the secret or its hash; absent rather than null for what does not apply. */
export function tokenBody(t: TokenRecord): Token {
  return {
    id: t.id,
    name: t.name,
    scopes: [...t.scopes],
    createdAt: t.createdAt.toISOString(),
    ...(t.lastUsedAt !== null && { lastUsedAt: t.lastUsedAt.toISOString() }),
    ...(t.expiresAt !== null && { expiresAt: t.expiresAt.toISOString() }),
    ...(t.revokedAt !== null && { revokedAt: t.revokedAt.toISOString() }),
  };
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** The guard ran before every handler here, so the request has its principal. */
function principalOf(request: FastifyRequest): Principal {
  return request.principal!;
}

export function tokenHandlers(tokens: TokenService, clock: Clock) {
  return {
    async getCurrentToken(request: FastifyRequest): Promise<CurrentToken> {
      const p = principalOf(request);
      // A JWT's identity is not stored, so it has no name of its own; an opaque token's principal is its record.
      const name = p.id.startsWith('jwt_') ? 'JWT' : (p as Partial<TokenRecord>).name ?? '';
      return { id: p.id, name, scopes: [...p.scopes], ...(p.expiresAt && { expiresAt: p.expiresAt.toISOString() }) };
    },

    async listTokens(request: OperationRequest<'listTokens'>, reply: FastifyReply): Promise<Token[]> {
      const limit = request.query.limit as number; // defaulted by the schema
      const after = request.query.after;
      if (after !== undefined && !(await tokens.get(after))) {
        throw new AppError('BAD_REQUEST', `query/after names no token: ${JSON.stringify(after)}. Start again without after.`);
      }
      // One more than the page, to know whether another follows.
      const page = await tokens.page(limit + 1, after);
      if (page.length > limit) {
        page.length = limit;
        reply.header('link', `</tokens?limit=${limit}&after=${encodeURIComponent(page.at(-1)!.id)}>; rel="next"`);
      }
      return page.map(tokenBody);
    },

    async createToken(request: OperationRequest<'createToken'>, reply: FastifyReply): Promise<TokenWithSecret> {
      const caller = principalOf(request);
      const { name, scopes, expiresAt } = request.body;
      const missing = scopes.filter((s) => !caller.scopes.includes(s));
      if (missing.length > 0) {
        throw new AppError('INSUFFICIENT_SCOPE', `A token can grant only scopes it holds: this token lacks ${listed(missing)}; nothing was made.`);
      }
      let expiry: Date | null = null;
      if (expiresAt !== undefined) {
        expiry = new Date(expiresAt);
        const now = clock.now();
        if (Number.isNaN(expiry.getTime())) throw new AppError('BODY_INVALID', '`expiresAt` must be an RFC 3339 date-time with an offset, such as 2031-01-31T12:00:00Z.');
        if (expiry.getTime() <= now) {
          throw new AppError('BODY_INVALID', `\`expiresAt\` (${expiry.toISOString()}) is not in the future (it is ${new Date(now).toISOString()} here); leave it out for a token that never expires.`);
        }
      }
      const { token, secret } = await tokens.create({ name, scopes: scopes as Scope[], expiresAt: expiry });
      request.log.info({ tokenId: token.id, callerId: caller.id, scopes: token.scopes }, 'token created');
      reply.code(201);
      // The only answer that ever carries the secret.
      return { ...tokenBody(token), secret };
    },

    async revokeToken(request: OperationRequest<'revokeToken'>, reply: FastifyReply) {
      const { id } = request.params;
      const revoked = await tokens.revoke(id);
      // False for an unknown token and for one revoked before: only the first is an error.
      if (!revoked && !(await tokens.get(id))) throw new AppError('NOT_FOUND', `No token with id ${JSON.stringify(id)}.`);
      request.log.info({ tokenId: id, callerId: principalOf(request).id }, revoked ? 'token revoked' : 'token was already revoked');
      return reply.code(204).send();
    },
  };
}
