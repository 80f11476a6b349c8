// The console at /console (CONSOLE=on, the default): the page and its two assets, built into dist/console/ by
// scripts/build-console.mjs, read once at start and answered from memory. Its policy lets the page load its own
// script and style sheet and call its own origin, nothing else: no inline script, no eval, no frame.
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const FILES = {
  '/console': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/console/assets/console.js': { file: 'console.js', type: 'text/javascript; charset=utf-8' },
  '/console/assets/console.css': { file: 'console.css', type: 'text/css; charset=utf-8' },
  '/console/assets/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
} as const;

/** Where the build puts the console (dist/console/, beside dist/src/). */
const BUILT = new URL('../../console/', import.meta.url);

export function registerConsole(app: FastifyInstance): void {
  for (const [url, { file, type }] of Object.entries(FILES)) {
    let body: Buffer;
    try {
      body = readFileSync(new URL(file, BUILT));
    } catch {
      throw new Error(`The console is not built (${new URL(file, BUILT).pathname} is missing): run npm run build, or set CONSOLE=off.`);
    }
    app.route({
      method: ['GET', 'HEAD'],
      url,
      config: { operation: url === '/console' ? 'consolePage' : 'consoleAsset' },
      handler: async (_request, reply) => reply.type(type).header('content-security-policy', CONSOLE_CSP).header('cache-control', 'no-cache').send(body),
    });
  }
}
