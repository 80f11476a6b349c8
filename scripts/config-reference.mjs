// Writes the settings table of docs/configuration.md (between its settings markers) and .env.example from the
// settings list in src/config.ts (built: run after `npm run build`). test/ops/config-reference.test.ts checks both.
import { readFileSync, writeFileSync } from 'node:fs';
import { envExample, settingsTable } from '../dist/src/config.js';

const root = new URL('..', import.meta.url);
const page = new URL('docs/configuration.md', root);
writeFileSync(page, replaceBetweenMarkers(readFileSync(page, 'utf8'), 'settings', settingsTable()));
writeFileSync(new URL('.env.example', root), envExample());
console.log('wrote docs/configuration.md (settings table) and .env.example');

/** `text` with what lies between the <!-- NAME:start --> and <!-- NAME:end --> lines replaced by `body`. */
function replaceBetweenMarkers(text, name, body) {
  const start = `<!-- ${name}:start -->\n`;
  const end = `<!-- ${name}:end -->`;
  const i = text.indexOf(start);
  const j = text.indexOf(end, i);
  if (i === -1 || j === -1) throw new Error(`docs/configuration.md has no ${start.trim()} ... ${end} markers`);
  return text.slice(0, i + start.length) + body + text.slice(j);
}
