// SECURITY.md names, for every promise it makes, the tests that hold it: each row of the threat model, each
// bullet and each paragraph (the reporting section aside) names at least one test file, every file named exists,
// and every test name quoted after a file ("…") is in that file. A renamed or deleted test fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SECURITY = readFileSync(`${ROOT}SECURITY.md`, 'utf8');
/** A test file in backticks, optionally followed by ("a part of a test's name"). */
const REFERENCE = /`(test\/[\w./-]+\.test\.ts)`(?: \("([^"]+)"\))?/g;

/** The promises: threat-model rows, bullets and paragraphs of every section but the reporting one. */
function promises(): string[] {
  const units: string[] = [];
  for (const section of SECURITY.split(/^## /m).slice(1)) {
    if (section.startsWith('Reporting a vulnerability')) continue;
    const body = section.slice(section.indexOf('\n') + 1);
    for (const block of body.split(/\n\s*\n/).map((b) => b.trim()).filter(Boolean)) {
      if (block.startsWith('|')) units.push(...block.split('\n').slice(2));
      else if (block.startsWith('- ')) units.push(...block.split(/\n(?=- )/));
      else units.push(block);
    }
  }
  return units;
}

test('every promise in SECURITY.md names a test that holds it', () => {
  const units = promises();
  assert.ok(units.length >= 20, `only ${units.length} promises found`);
  const unnamed = units.filter((u) => ![...u.matchAll(REFERENCE)].length).map((u) => u.slice(0, 100));
  assert.deepEqual(unnamed, [], 'promises that name no test');
});

test('every test SECURITY.md names exists: the file, and the test name when one is quoted', () => {
  const missing: string[] = [];
  const references = [...SECURITY.matchAll(REFERENCE)];
  assert.ok(references.length >= 40, `only ${references.length} references`);
  for (const [, file, name] of references) {
    if (!existsSync(`${ROOT}${file}`)) {
      missing.push(`${file} does not exist`);
      continue;
    }
    if (name && !readFileSync(`${ROOT}${file}`, 'utf8').includes(name)) missing.push(`${file} has no test named "${name}"`);
  }
  assert.deepEqual(missing, []);
});
