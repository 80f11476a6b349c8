// docs/architecture.md draws the code as layers: no file under src/ may import itself back through others
// (a loop of imports, type imports and import() included). dependency-cruiser reads the TypeScript sources as
// they are written, `.js` suffixes and all, and names each loop it finds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult } from 'dependency-cruiser';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(`${dir}/${e.name}`) : /\.(ts|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [`${dir}/${e.name}`] : [],
  );
}

async function importGraph(): Promise<ICruiseResult> {
  const { output } = await cruise(
    ['src'],
    {
      baseDir: ROOT,
      // Type-only imports are edges too: a loop through a type is still a loop between files.
      tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
      validate: true,
      ruleSet: { forbidden: [{ name: 'no-circular', severity: 'error', from: {}, to: { circular: true } }] },
    },
  );
  return output as ICruiseResult;
}

test('no file under src/ imports itself back through other files', async () => {
  const graph = await importGraph();
  const read = new Set(graph.modules.map((m) => m.source));
  // A file the tool did not reach, or an import it could not resolve, would hide a loop instead of failing.
  const unread = sourceFiles('src').filter((f) => !read.has(f));
  assert.deepEqual(unread, [], `not read: ${unread.join(', ')}`);
  const unresolved = graph.modules.flatMap((m) =>
    m.dependencies.filter((d) => d.couldNotResolve).map((d) => `${relative('.', m.source)} -> ${d.module}`),
  );
  assert.deepEqual(unresolved, [], `imports not resolved: ${unresolved.join(', ')}`);
  const loops = new Set(
    graph.summary.violations
      .filter((v) => v.rule.name === 'no-circular')
      .map((v) => [v.from, ...(v.cycle ?? []).map((step) => step.name)].join(' -> ')),
  );
  assert.deepEqual([...loops], [], `import circles:\n${[...loops].join('\n')}`);
});
