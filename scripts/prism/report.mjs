// The summary of scripts/prism-run.mjs: operations not driven, unexpected statuses, findings and Prism's own
// limits, sorted. Prints it and returns the exit code: 1 on a finding, an unexpected status or an operation
// not driven.
import { execFileSync } from 'node:child_process';
import { DOC, YAML_LIMIT, results, settings } from './harness.mjs';

export function report(stores) {
  let exitCode = 0;
  // Every operation of the document was driven at least once.
  const driven = new Set(results.map((r) => `${r.method} ${r.path.split('?')[0]}`));
  const templates = Object.entries(DOC.paths).flatMap(([path, item]) =>
    Object.keys(item).filter((m) => ['get', 'head', 'post', 'put', 'patch', 'delete'].includes(m)).map((m) => ({ op: item[m].operationId, method: m.toUpperCase(), regex: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`) })),
  );
  const notDriven = templates.filter((t) => ![...driven].some((d) => d.startsWith(`${t.method} `) && t.regex.test(d.slice(t.method.length + 1)))).map((t) => t.op);

  const kinds = { expected: [], int64: [], yaml: [], finding: [] };
  for (const r of results) for (const v of r.violations) kinds[v.kind].push({ r, v });
  const line = ({ r, v }) => `  [${r.store}] ${r.method} ${r.path.slice(0, 90)} (${r.name}) -> ${r.status}: ${(v.location ?? []).join('.')}: ${v.message}`;
  const out = [];
  out.push(`Prism ${execFileSync(settings.prism, ['--version'], { encoding: 'utf8' }).trim()} proxy over openapi/plant-store.yaml: ${results.length} requests, stores ${stores}`);
  out.push(`statuses answered: ${[...new Set(results.map((r) => r.status))].sort().join(', ')}`);
  out.push(`operations not driven: ${notDriven.length ? notDriven.join(', ') : 'none'}`);
  const problems = results.filter((r) => r.statusProblem);
  out.push(`unexpected statuses: ${problems.length}`);
  for (const r of problems) out.push(`  [${r.store}] ${r.method} ${r.path.slice(0, 90)} (${r.name}): ${r.statusProblem}`);
  out.push(`findings (the document or the service departs): ${kinds.finding.length}`);
  out.push(...kinds.finding.map(line));
  const limited = results.filter((r) => r.prismLimit);
  out.push(`answers Prism changed (its own limits; the service answers as expected when asked directly): ${limited.length}`);
  for (const r of limited) out.push(`  [${r.store}] ${r.method} ${r.path.slice(0, 90)} (${r.name}): ${r.prismLimit}`);
  out.push(`Prism's int64 limits (ids beyond 2^53 - 1, which the document allows): ${kinds.int64.length}`);
  out.push(...kinds.int64.map(line));
  out.push(`Prism's reading of YAML answers (${YAML_LIMIT}): ${kinds.yaml.length}`);
  out.push(...kinds.yaml.map(line));
  out.push(`request violations of requests that are bad on purpose: ${kinds.expected.length}`);
  if (settings.verbose) out.push(...kinds.expected.map(line));
  process.stdout.write(`${out.join('\n')}\n`);
  if (kinds.finding.length > 0 || problems.length > 0 || notDriven.length > 0) exitCode = 1;
  return exitCode;
}
