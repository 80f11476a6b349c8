// The only request body parser: JSON in UTF-8 (application/json, application/merge-patch+json), int64-exact
// (src/json/). Anything else is 415; so is a JSON type an operation does not declare (contract-routes.ts).
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors/catalogue.js';
import { parseJson, TooManyExactNumbersError } from '../json/lossless-json.js';
import { duplicateMember } from '../json/duplicate-members.js';
import { JSON_MEDIA_TYPES } from './contract.js';

/**
 * Number literals per body that take the exact (slower) path: an exponent or 16+ digits. No operation's body
 * holds more than a few numbers; the bound keeps a body of nothing else from costing ten times a plain one.
 */
export const MAX_EXACT_NUMBERS = 1_000;

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;

export function registerJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_MEDIA_TYPES, { parseAs: 'buffer' }, (request, body, done) => {
    const charset = CHARSET.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      done(new AppError('UNSUPPORTED_MEDIA_TYPE', `The request body must be UTF-8 JSON; charset ${charset.slice(0, 40)} is not supported.`), undefined);
      return;
    }
    const encoding = request.headers['content-encoding']?.trim().toLowerCase();
    if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
      // Read as text, a compressed body would only be reported as invalid UTF-8 (RFC 9110: 415).
      done(new AppError('UNSUPPORTED_MEDIA_TYPE', `The request body must not be compressed; Content-Encoding ${encoding.slice(0, 40)} is not supported.`, {
        headers: { 'accept-encoding': 'identity' },
      }), undefined);
      return;
    }
    const buffer = body as Buffer;
    if (buffer.length === 0) return done(new AppError('BODY_EMPTY'), undefined);
    if (!isUtf8(buffer)) return done(new AppError('BODY_NOT_UTF8'), undefined);
    let value: unknown;
    const text = buffer.toString('utf8');
    try {
      value = parseJson(text, 'schema', { maxExactNumbers: MAX_EXACT_NUMBERS });
    } catch (err) {
      if (err instanceof TooManyExactNumbersError) {
        return done(new AppError('BODY_TOO_MANY_NUMBERS', `The request body holds ${err.message}; at most ${err.limit} are accepted.`), undefined);
      }
      return done(malformedJson(err), undefined);
    }
    // JSON.parse keeps the last of two members of one name: {"id":5,"id":6} would be plant 6, unsaid.
    const duplicate = duplicateMember(text);
    if (duplicate) {
      const where = duplicate.at === '' ? '' : ` in the object at ${duplicate.at.slice(0, 100)}`;
      return done(
        new AppError('BODY_MALFORMED', `The request body has the member '${duplicate.name.slice(0, 100)}' twice${where}: member names must be unique (I-JSON, RFC 7493).`),
        undefined,
      );
    }
    done(null, value);
  });
}

/** Turns a parse failure into the client's 400. */
export function malformedJson(err: unknown): AppError {
  const detail = err instanceof SyntaxError ? `: ${err.message}` : '';
  return new AppError('BODY_MALFORMED', `The request body is not valid JSON${detail.slice(0, 200)}`);
}
