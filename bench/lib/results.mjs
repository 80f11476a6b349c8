// What npm run bench (run.mjs) writes: results.json and chart.svg of the HTTP cells, and results.md: those
// cells, their targets, the row checks, the constant-rate, scaling and memory parts, then the rows of the stream,
// replication and takeover stages from their own results files.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KINDS } from './servers.mjs';
import { ceilingOf, fmt, replicationSection, streamSection, svg, table, takeoverSection } from './report.mjs';

/** results.json and chart.svg of the HTTP cells (unless mdOnly), and results.md: those cells, then the rows of the stream, replication and takeover stages. */
export function writeResults(dir, run, log, { mdOnly = false } = {}) {
  const { machine, cfg, cells, rowChecks, failures, constantRate, scaling, bigInfo, soak } = run;
  mkdirSync(dir, { recursive: true });
  if (!mdOnly) {
    writeFileSync(join(dir, 'results.json'), JSON.stringify(run, null, 1) + '\n');
    const servers = KINDS.map((k) => k.name).filter((n) => cells.some((c) => c.server === n));
    writeFileSync(join(dir, 'chart.svg'), svg(cells, cfg.conns, cfg.endpoints, servers));
  }
  const md = [];
  md.push('# Benchmark results', '', `Produced by \`npm run bench\` (bench/run.mjs), ${machine.started} – ${machine.finished}.`, '');
  md.push('## Machine', '', `- CPU: ${machine.cpu}, ${machine.cores} cores; kernel ${machine.kernel}; Node ${machine.node} (Prism on ${machine.node24}); ${machine.wrk}`,
    `- Server pinned to core 0, load generator to core 1 (taskset); one wrk thread; ${cfg.warmup} s warm-up then ${cfg.seconds} s measured per cell; ${cfg.rounds} rounds, the second in reverse server order.`,
    `- Disk: a 4 KiB write + fdatasync took p50 ${machine.fsync.p50_ms.toFixed(2)} ms, p90 ${machine.fsync.p90_ms.toFixed(2)} ms, p99 ${machine.fsync.p99_ms.toFixed(2)} ms, max ${machine.fsync.max_ms.toFixed(1)} ms (${machine.fsync.count} samples before the run): the floor of one durable commit.`,
    `- Load average (1/5/15 min) before: ${machine.loadBefore.map((v) => v.toFixed(2)).join(' / ')}, after: ${machine.loadAfter.map((v) => v.toFixed(2)).join(' / ')}; per cell in results.json. This is a shared virtual machine whose speed drifts by up to 2x within minutes, so absolute figures are noisy; ratios within a round are the figures to trust.`,
    `- Each connection's first request waits ${cfg.connectPauseMs} ms (taken off the duration), so no cell starts with connections the server has not accepted yet: a saturated Node.js server accepts one new connection per event-loop turn.`, '');
  md.push('Latency is wrk 4.1\'s histogram as reported to its Lua `done()`, i.e. after `stats_correct()`, its partial coordinated-omission correction (it adds synthetic samples for responses slower than twice the expected interval). The constant-rate table below measures from each request\'s due time instead.', '');
  md.push('![throughput and p99 against concurrency](chart.svg)', '');
  for (let round = 1; round <= cfg.rounds; round++) md.push(`## Round ${round}`, '', table(cells, round), '');
  md.push('## Targets', '', targets(run).join('\n'), '');
  md.push('## Row check (plant-store and the floor)', '', '| round | server | bench rows in the DB | 200s counted by wrk | difference | bound (requests in flight at the stops) | ok |', '|---:|---|---:|---:|---:|---:|---|');
  for (const r of rowChecks) md.push(`| ${r.round} | ${r.server ?? 'plant-store'} | ${r.rows} | ${r.ok200} | ${r.rows - r.ok200} | ${r.inflightBound} | ${r.pass ? 'yes' : '**no**'} |`);
  md.push('');
  if (constantRate.length) {
    md.push('## Constant rate (open model, POST /plants, up to 256 connections)', '', '| server | target req/s | achieved | p50 ms | p99 ms | p99.9 ms | max ms | errors / non-2xx |', '|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of constantRate) md.push(`| ${r.server} | ${r.rate} | ${fmt(r.achieved_rps)} | ${r.p50_ms.toFixed(2)} | ${r.p99_ms.toFixed(2)} | ${r.p999_ms.toFixed(2)} | ${r.max_ms.toFixed(1)} | ${r.errors} / ${r.non2xx} |`);
    md.push('');
  }
  if (scaling.length) {
    md.push(`## Scaling with data (plant-store)`, '', `The ${cfg.bigRows}-row database (bench/.data/, not in git) took ${bigInfo.seedSeconds ? `${bigInfo.seedSeconds.toFixed(0)} s to seed (direct better-sqlite3 inserts, one transaction, into a migrated database)` : 'no time: it was reused from an earlier run'}; ${fmt(bigInfo.sizeMb)} MB. Before its cells the file was read once into the OS page cache (${bigInfo.warmSeconds?.toFixed(1)} s), so they measure the store rather than a cold disk.`, '',
      '| round | store | endpoint | c | req/s | p50 ms | p99 ms | × empty (req/s) | non-2xx |', '|---:|---|---|---:|---:|---:|---:|---:|---:|');
    for (const c of scaling) {
      const empty = scaling.find((e) => e.round === c.round && e.label === 'empty' && e.endpoint === c.endpoint && e.conns === c.conns);
      md.push(`| ${c.round} | ${c.label} | ${c.endpoint} | ${c.conns} | ${fmt(c.rps)} | ${c.p50_ms.toFixed(2)} | ${c.p99_ms.toFixed(2)} | ${(c.rps / empty.rps).toFixed(2)}× | ${c.non2xx} |`);
    }
    md.push('');
  }
  if (soak) {
    const rss = soak.samples.map((x) => x.rssMb).filter(Number.isFinite);
    const firstMin = soak.samples.filter((x) => x.s <= 60).map((x) => x.rssMb), lastMin = soak.samples.filter((x) => x.s >= soak.seconds - 60).map((x) => x.rssMb);
    const avg = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    md.push(`## Memory over ${soak.seconds} s (plant-store, POST c=256)`, '',
      `${fmt(soak.rps)} req/s, p50 ${soak.p50_ms.toFixed(2)} ms, p99 ${soak.p99_ms.toFixed(2)} ms, max ${soak.max_ms.toFixed(1)} ms; ${soak.ok200} 200s, ${soak.rows} rows stored. ` +
      `RSS (sampled every 5 s): min ${fmt(Math.min(...rss))} MB, max ${fmt(Math.max(...rss))} MB, mean of the first minute ${fmt(avg(firstMin))} MB, of the last minute ${fmt(avg(lastMin))} MB.`, '',
      `RSS MB by minute: ${soak.samples.filter((x) => x.s % 60 < 5).map((x) => `${Math.round(x.s / 60)}′ ${fmt(x.rssMb)}`).join(', ')}`, '');
  }
  if (failures.length) {
    md.push('## Could not run', '');
    for (const f of failures) md.push(`- round ${f.round}, ${f.server}: ${f.error}`);
    md.push('');
  }
  md.push(...stageRows(dir));
  writeFileSync(join(dir, 'results.md'), md.join('\n'));
  log(`wrote ${dir}/results.md`);
}

/** The rows of the stream, replication and takeover stages, from their results files (each says when and where it ran). */
function stageRows(dir) {
  const read = (name) => (existsSync(join(dir, name)) ? JSON.parse(readFileSync(join(dir, name), 'utf8')) : undefined);
  const streams = read('streams.json');
  const replication = read('replication-cost.json');
  const takeover = read('takeover.json');
  return [
    ...(streams ? streamSection(streams) : ['## The event stream', '', 'Not run yet: `npm run bench -- --only streams`.', '']),
    ...(replication ? replicationSection(replication) : ['## Replication on against off', '', 'Not run yet: `npm run bench -- --only replication`.', '']),
    ...(takeover ? takeoverSection(takeover) : ['## Upgrade by takeover under load', '', 'Not run yet: `npm run bench -- --only takeover`.', '']),
  ];
}

function targets({ cfg, cells, scaling }) {
  const out = ['| round | target | measured | met |', '|---:|---|---|---|'];
  const at = (round, server, endpoint, conns) => cells.find((c) => c.round === round && c.server === server && c.endpoint === endpoint && c.conns === conns);
  for (let round = 1; round <= cfg.rounds; round++) {
    const row = (name, value, ok) => out.push(`| ${round} | ${name} | ${value} | ${ok === undefined ? '–' : ok ? 'yes' : '**no**'} |`);
    const vsCeil = (endpoint, conns, min) => {
      const c = at(round, 'plant-store', endpoint, conns);
      const ceil = c && ceilingOf(cells, c);
      if (c && ceil) row(`${endpoint} c=${conns} ≥ ${min}× ceiling (${ceil.server})`, `${(c.rps / ceil.rps).toFixed(2)}× (${fmt(c.rps)} / ${fmt(ceil.rps)} req/s)`, c.rps / ceil.rps >= min);
      return c;
    };
    const post100 = vsCeil('post', 100, 0.8);
    if (post100) row('post c=100 p99 ≤ 15 ms', `${post100.p99_ms.toFixed(2)} ms`, post100.p99_ms <= 15);
    const post1 = at(round, 'plant-store', 'post', 1);
    if (post1) row('post c=1 p50 ≤ 1 ms', `${post1.p50_ms.toFixed(2)} ms`, post1.p50_ms <= 1);
    for (const conns of cfg.conns) vsCeil('get', conns, 0.85);
    // The floors (servers/floor-http.mjs): node:http doing only the work a GET by id, or a durable create
    // (servers/floor-create.mjs), must do; the targets are at c=100.
    for (const endpoint of ['post', 'get']) {
      for (const conns of cfg.conns) {
        const c = at(round, 'plant-store', endpoint, conns);
        const floor = at(round, 'floor', endpoint, conns);
        if (c && floor) row(`${endpoint} c=${conns}${conns === 100 ? ' ≥ 0.8×' : ' ×'} floor`, `${(c.rps / floor.rps).toFixed(2)}× (${fmt(c.rps)} / ${fmt(floor.rps)} req/s)`, conns === 100 ? c.rps / floor.rps >= 0.8 : undefined);
      }
    }
    for (const conns of cfg.conns) vsCeil('list', conns, 0.5);
    for (const [peer, min] of [['express+validator', 6], ['prism', 6], ['json-server', 50]]) {
      const p = at(round, peer, 'post', 100);
      if (post100 && p) row(`post c=100 ≥ ${min}× ${peer}`, `${(post100.rps / p.rps).toFixed(1)}× (${fmt(p.rps)} req/s${p.non2xx ? `, ${p.non2xx} non-2xx` : ''})`, post100.rps / p.rps >= min);
    }
    // Over every c=256 cell of the round, each after the cells before it in the same process.
    const at256 = cfg.endpoints.map((e) => at(round, 'plant-store', e, 256)).filter(Boolean);
    if (at256.length) {
      const worst = at256.reduce((a, b) => (b.rssMaxMb > a.rssMaxMb ? b : a));
      row('RSS at c=256 ≤ 200 MB', `${fmt(worst.rssMaxMb)} MB (${at256.map((c) => `${c.endpoint} ${fmt(c.rssMaxMb)}`).join(', ')})`, worst.rssMaxMb <= 200);
    }
  }
  for (const c of scaling.filter((s) => s.label !== 'empty')) {
    const empty = scaling.find((e) => e.round === c.round && e.label === 'empty' && e.endpoint === c.endpoint && e.conns === c.conns);
    out.push(`| ${c.round} | ${c.endpoint} c=${c.conns} with ${c.label} ≥ 0.8× empty | ${(c.rps / empty.rps).toFixed(2)}× | ${c.rps / empty.rps >= 0.8 ? 'yes' : '**no**'} |`);
  }
  return out;
}
