// docs/ and the README read in one pass: outside code and tables, a page's sentences average at most 20 words and
// none is over 45, and each page opens with what it is for and its shortest working example (a code block near
// the top).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { figures, sentencesOf } from './sentences.js';

const root = new URL('../../../', import.meta.url);
const PAGES = ['README.md', ...readdirSync(new URL('docs/', root)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const MEAN = 20;
const LONGEST = 45;
/** The first code block starts within this many lines of the page's top. */
const EXAMPLE_WITHIN = 40;

test('the sentence counter splits sentences, keeps abbreviations and leaves code out', () => {
  assert.deepEqual(sentencesOf('One two. Three four, e.g. five! Six?'), ['One two.', 'Three four, e.g. five!', 'Six?']);
  const f = figures('# Title\n\nA short one. `npm ci && npm start` runs it.\n\n```sh\nnot prose at all here.\n```\n\n| a | b |\n');
  assert.equal(f.sentences, 2);
  assert.equal(f.meanWords, 3);
});

for (const page of PAGES) {
  test(`${page}: sentences average at most ${MEAN} words, none over ${LONGEST}, and an example near the top`, () => {
    const text = readFileSync(new URL(page, root), 'utf8');
    const f = figures(text);
    assert.ok(f.meanWords <= MEAN, `${page}: the mean sentence is ${f.meanWords.toFixed(1)} words`);
    const over = f.longest.filter((l) => l.words > LONGEST);
    assert.deepEqual(over, [], `${page}: sentences over ${LONGEST} words`);
    const firstFence = text.split('\n').findIndex((l) => /^\s*(```|~~~)/.test(l));
    assert.ok(firstFence >= 0 && firstFence < EXAMPLE_WITHIN, `${page}: the first example starts on line ${firstFence + 1}`);
  });
}
