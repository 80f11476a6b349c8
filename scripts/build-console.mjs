// The last step of `npm run build`: the console's front end (console/, Preact) bundled by esbuild into
// dist/console/ (index.html, console.js, console.css), which serve answers at /console. It prints the bundle's
// size compressed, as a browser fetches it.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const root = new URL('..', import.meta.url);
const out = new URL('dist/console/', root);
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [new URL('console/main.tsx', root).pathname],
  outfile: new URL('console.js', out).pathname,
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) copyFileSync(new URL(`console/${file}`, root), new URL(file, out));
// One style sheet: uPlot's own rules for its charts, then the console's.
const uplotCss = readFileSync(new URL('node_modules/uplot/dist/uPlot.min.css', root), 'utf8');
writeFileSync(new URL('console.css', out), `${uplotCss}\n${readFileSync(new URL('console/console.css', root), 'utf8')}`);
const sizes = ['console.js', 'console.css', 'index.html'].map((f) => gzipSync(readFileSync(new URL(f, out))).length);
console.log(`console: ${(sizes.reduce((a, b) => a + b, 0) / 1024).toFixed(1)} KB compressed (JS ${(sizes[0] / 1024).toFixed(1)}, CSS ${(sizes[1] / 1024).toFixed(1)}, HTML ${(sizes[2] / 1024).toFixed(1)})`);
