// The prose of a Markdown page as sentences, for the rule that docs/ and the README read in one pass: what is
// outside code, tables, headings and HTML comments, with links reduced to their text and inline code to one word.
// Run directly (node dist/test/docs/sentences.js [FILE...]) it prints each page's figures and its longest sentences.

/** Abbreviations whose full stop does not end a sentence. */
const ABBREVIATIONS = /(?:^|\s)(?:e\.g|i\.e|etc|vs|cf|approx|no|ca)\.$/i;

/** The prose blocks of a page: paragraphs and list items, each as one line of text. */
export function proseBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  let current: string[] = [];
  let fenced = false;
  let comment = false;
  const flush = () => {
    if (current.length > 0) blocks.push(current.join(' '));
    current = [];
  };
  for (const raw of markdown.split('\n')) {
    const line = raw.trim();
    if (/^(```|~~~)/.test(line)) {
      flush();
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    if (comment || line.startsWith('<!--')) {
      flush();
      comment = !line.includes('-->');
      continue;
    }
    if (line === '' || line.startsWith('|') || line.startsWith('#') || /^<\/?[a-z]/i.test(line) || /^(-{3,}|\*{3,})$/.test(line)) {
      flush();
      continue;
    }
    const item = /^(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      flush();
      current.push(item[1]!);
      continue;
    }
    current.push(line.replace(/^>\s?/, ''));
  }
  flush();
  return blocks.map((b) =>
    b
      .replace(/`[^`]*`/g, 'CODE')
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1')
      .replace(/[*_]{1,2}([^*_]+)[*_]{1,2}/g, '$1'),
  );
}

/** One block's sentences: split after . ! ? (or a colon that ends the block's lead-in) followed by a space. */
export function sentencesOf(block: string): string[] {
  const out: string[] = [];
  let start = 0;
  const re = /[.!?]["')\]]*(?=\s+|$)/g;
  for (let m = re.exec(block); m; m = re.exec(block)) {
    const end = m.index + m[0].length;
    const candidate = block.slice(start, end);
    if (ABBREVIATIONS.test(candidate.slice(0, candidate.length - m[0].length + 1))) continue;
    out.push(candidate.trim());
    start = end;
  }
  const rest = block.slice(start).trim();
  if (rest !== '') out.push(rest);
  return out.filter((s) => wordCount(s) > 0);
}

export function wordCount(sentence: string): number {
  return sentence.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
}

export interface PageFigures {
  sentences: number;
  meanWords: number;
  longest: { words: number; text: string }[];
}

export function figures(markdown: string): PageFigures {
  const all = proseBlocks(markdown).flatMap(sentencesOf);
  const counts = all.map(wordCount);
  const total = counts.reduce((a, b) => a + b, 0);
  return {
    sentences: all.length,
    meanWords: all.length === 0 ? 0 : total / all.length,
    longest: all
      .map((text, i) => ({ words: counts[i]!, text }))
      .sort((a, b) => b.words - a.words)
      .slice(0, 5),
  };
}

const invoked = process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (invoked) {
  const { readFileSync } = await import('node:fs');
  for (const file of process.argv.slice(2)) {
    const f = figures(readFileSync(file, 'utf8'));
    process.stdout.write(`${file}: ${f.sentences} sentences, mean ${f.meanWords.toFixed(1)} words, longest ${f.longest[0]?.words ?? 0}\n`);
    for (const l of f.longest.filter((x) => x.words > 45)) process.stdout.write(`  ${l.words}: ${l.text}\n`);
  }
}
