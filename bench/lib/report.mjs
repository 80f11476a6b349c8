// Turns measured cells into the markdown table (ratios to the ceiling of the same round) and an SVG chart.

export const fmt = (v, d = 0) => (Number.isFinite(v) ? v.toFixed(d) : '–');
const ms = (v) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : '–');
const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : '–');

/** The ceiling of one (round, endpoint, conns): the faster of the two minimal servers. */
export function ceilingOf(cells, c) {
  const candidates = cells.filter((x) => x.role === 'ceiling' && x.round === c.round && x.endpoint === c.endpoint && x.conns === c.conns);
  return candidates.sort((a, b) => b.rps - a.rps)[0];
}

export function table(cells, round) {
  const lines = [
    '| endpoint | c | server | req/s | × ceiling | p50 ms | × ceiling | p99 ms | × ceiling | errors / non-2xx | max RSS MB |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of cells.filter((x) => x.round === round)) {
    const ceil = ceilingOf(cells, c);
    const name = ceil && ceil.server === c.server ? `**${c.server}** (ceiling)` : c.server;
    lines.push(`| ${c.endpoint} | ${c.conns} | ${name} | ${fmt(c.rps)} | ${ratio(c.rps, ceil?.rps)} | ${ms(c.p50_ms)} | ${ratio(c.p50_ms, ceil?.p50_ms)} | ` +
      `${ms(c.p99_ms)} | ${ratio(c.p99_ms, ceil?.p99_ms)} | ${c.socketErrors} / ${c.non2xx} | ${fmt(c.rssMaxMb)} |`);
  }
  return lines.join('\n');
}

const COLORS = { 'node:http': '#555555', fastify: '#999999', floor: '#d68910', 'plant-store': '#1b7f3b', 'express+validator': '#1f5fbf', 'json-server': '#c0392b', prism: '#8e44ad' };

/** Throughput and p99 against concurrency, one panel per endpoint and metric; values are means over rounds. */
export function svg(cells, conns, endpoints, servers) {
  const W = 300, H = 210, padL = 56, padB = 34, padT = 26;
  const panels = [];
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  endpoints.forEach((endpoint, col) => {
    [['rps', 'req/s', false], ['p99_ms', 'p99 ms (log)', true]].forEach(([key, label, log], row) => {
      const x0 = col * (W + 20) + 10, y0 = row * (H + 20) + 40;
      const series = servers.map((server) => ({
        server,
        points: conns.map((c) => {
          const xs = cells.filter((x) => x.server === server && x.endpoint === endpoint && x.conns === c).map((x) => x[key]).filter(Number.isFinite);
          return xs.length ? mean(xs) : NaN;
        }),
      }));
      const values = series.flatMap((s) => s.points).filter((v) => Number.isFinite(v) && v > 0);
      if (values.length === 0) return;
      const max = Math.max(...values), min = Math.min(...values);
      const lo = log ? Math.log10(Math.max(min, 0.01)) : 0, hi = log ? Math.log10(max) + 0.1 : max * 1.08;
      const y = (v) => y0 + padT + (H - padT - padB) * (1 - ((log ? Math.log10(Math.max(v, 0.01)) : v) - lo) / (hi - lo || 1));
      const x = (i) => x0 + padL + ((W - padL - 10) * i) / (conns.length - 1 || 1);
      const out = [`<rect x="${x0}" y="${y0}" width="${W}" height="${H}" fill="white" stroke="#ccc"/>`,
        `<text x="${x0 + W / 2}" y="${y0 + 16}" text-anchor="middle" font-size="12">${endpoint.toUpperCase()} — ${label}</text>`];
      for (let t = 0; t <= 4; t++) {
        const v = log ? 10 ** (lo + ((hi - lo) * t) / 4) : (hi * t) / 4;
        out.push(`<line x1="${x0 + padL}" x2="${x0 + W - 10}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`,
          `<text x="${x0 + padL - 4}" y="${y(v) + 4}" text-anchor="end" font-size="10">${v >= 100 ? fmt(v) : v.toFixed(v >= 1 ? 1 : 2)}</text>`);
      }
      conns.forEach((c, i) => out.push(`<text x="${x(i)}" y="${y0 + H - padB + 14}" text-anchor="middle" font-size="10">c=${c}</text>`));
      for (const s of series) {
        const pts = s.points.map((v, i) => (Number.isFinite(v) && v > 0 ? `${x(i).toFixed(1)},${y(v).toFixed(1)}` : null)).filter(Boolean);
        if (pts.length) out.push(`<polyline fill="none" stroke="${COLORS[s.server] ?? '#000'}" stroke-width="${s.server === 'plant-store' ? 3 : 1.5}" points="${pts.join(' ')}"/>`);
      }
      panels.push(out.join('\n'));
    });
  });
  const width = endpoints.length * (W + 20) + 10, height = 2 * (H + 20) + 60;
  const legend = servers.map((s, i) => `<rect x="${10 + i * 150}" y="10" width="12" height="12" fill="${COLORS[s] ?? '#000'}"/><text x="${26 + i * 150}" y="20" font-size="12">${s}</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="#fafafa"/>\n${legend.join('\n')}\n${panels.join('\n')}\n</svg>\n`;
}

/** The event stream's cells (streams.mjs, results/streams.json) as a markdown section: one column per server. */
export function streamSection({ when, machine, settings: st, loadBefore, loadAfter, rows }, heading = '##') {
  const f = (v, d = 1) => fmt(v, d);
  const cell = (label, value) => `| ${label} | ${rows.map(value).join(' | ')} |`;
  return [
    `${heading} The event stream (bench/streams.mjs, ${when}, ${machine.name})`, '',
    `Each server in turn on core 0 (plant-store: one process, SQLite); the readers and the writer in one process on core 1, over raw sockets. ` +
      `${st.idleStreams > 0 ? `${st.idleStreams.toLocaleString('en-US')} idle streams for ${st.idleSeconds} s, then ` : ''}${st.liveStreams.toLocaleString('en-US')} streams while ${st.rate} plants a second are created for ${st.seconds} s; ` +
      `latency from each POST's 200 to the event's arrival on each stream. ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}; load average ${f(loadBefore, 2)} before, ${f(loadAfter, 2)} after.`, '',
    `| cell | ${rows.map((r) => r.name).join(' | ')} |`, `|---|${rows.map(() => '---:').join('|')}|`,
    ...(st.idleStreams > 0 ? [
      cell(`${st.idleStreams.toLocaleString('en-US')} idle streams: server RSS (a stream)`, (r) => `${f(r.rssBefore, 0)} → ${f(r.rssOpen, 0)} MB (${f(r.kbStream)} kB)`),
      cell(`idle: server CPU over ${st.idleSeconds} s`, (r) => `${f(r.cpuIdle, 0)} ms`),
    ] : []),
    cell(`${st.liveStreams.toLocaleString('en-US')} streams, ${st.rate} plants/s: streams with every event once, in order`, (r) => `${r.complete} of ${r.live}`),
    cell('POST 200 → arrival p50 / p99 / max', (r) => `${f(r.p50)} / ${f(r.p99)} / ${f(r.max)} ms`),
    cell('server CPU meanwhile', (r) => `${f(r.serverCpu, 0)}% of its core`),
    cell('readers\' process CPU meanwhile', (r) => `${f(r.readerCpu, 0)}% of its core`),
    cell('events a socket read carried', (r) => f(r.perRead, 2)),
    cell('POSTs sent over (past the run\'s length: the readers\' process fell behind)', (r) => `${f(r.sentS)} s`),
    '',
  ];
}

/** Replication on against off (replication-cost.mjs, results/replication-cost.json) as a markdown section. */
export function replicationSection({ machine, cfg, cells }, heading = '##') {
  const off = (c) => cells.find((o) => o.round === c.round && o.replication === 'off');
  const ms = (v) => fmt(v, 2);
  return [
    `${heading} Replication on against off (bench/replication-cost.mjs, ${machine.started}, ${machine.name})`, '',
    `POST /plants at c=${cfg.conns}, one plant-store process on core 0 (SQLite, full durability), wrk on core 1; "on" adds REPLICA_URL to a \`file://\` replica in the temp dir ` +
      `(Litestream, a child of the server: its CPU is counted in the server's). ${cfg.warmup} s warm-up and ${cfg.seconds} s measured per cell, ${cfg.rounds} rounds, the order reversed every other round; ` +
      `× off is the ratio to the same round's cell without replication. ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}; load average ${machine.loadBefore.map((v) => v.toFixed(2)).join(' / ')} before, ${machine.loadAfter.map((v) => v.toFixed(2)).join(' / ')} after.`, '',
    '| round | replication | req/s | × off | server CPU µs/req | × off | p50 ms | p99 ms | non-2xx / errors | replication lag p50 / p99 / max s | max RSS MB |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|',
    ...cells.map((c) => {
      const o = off(c);
      const x = (a, b) => (o ? `${(a / b).toFixed(2)}×` : '–');
      const lag = c.lag ? `${ms(c.lag.p50)} / ${ms(c.lag.p99)} / ${ms(c.lag.max)}` : '–';
      return `| ${c.round} | ${c.replication} | ${fmt(c.rps)} | ${x(c.rps, o?.rps)} | ${fmt(c.cpuUs)} | ${x(c.cpuUs, o?.cpuUs)} | ${ms(c.p50_ms)} | ${ms(c.p99_ms)} | ${c.non2xx} / ${c.socketErrors} | ${lag} | ${fmt(c.rssMaxMb)} |`;
    }),
    '',
  ];
}

/** An upgrade by takeover under load (takeover.mjs, results/takeover.json) as a markdown section: medians (range) of each case. */
export function takeoverSection({ machine, cfg, cases, skipped = [] }, heading = '##') {
  const median = (xs) => {
    const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
    return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const spread = (reps, get, d = 0) => {
    const xs = reps.map(get).filter(Number.isFinite);
    return xs.length ? `${fmt(median(xs), d)} (${fmt(Math.min(...xs), d)}–${fmt(Math.max(...xs), d)})` : '–';
  };
  const failed = (reps) => {
    const n = reps.reduce((a, r) => a + r.failed, 0);
    const what = {};
    for (const r of reps) for (const [k, v] of Object.entries(r.failedBy)) what[k] = (what[k] ?? 0) + v;
    const sent = reps.reduce((a, r) => a + r.load.requests, 0);
    return `${n ? `**${n}**` : 0} of ${sent.toLocaleString('en-US')}${n ? ` (${Object.entries(what).map(([k, v]) => `${k} ×${v}`).join(', ')})` : ''}`;
  };
  return [
    `${heading} Upgrade by takeover under load (bench/takeover.mjs, ${machine.started}, ${machine.name})`, '',
    `A \`plant-store serve\` (HOST 127.0.0.1, a fixed PORT, RUNTIME_DIRECTORY a temp dir, LOG_LEVEL=info) serves ${cfg.rate} requests a second (open model, every ${cfg.getEvery === 2 ? 'other' : `${cfg.getEvery}th`} one a GET /plants/{id} of a seeded plant, the rest POST /plants, up to ${cfg.conns} keep-alive connections, the load generator on core ${cfg.loadCore}, the servers unpinned); ` +
      `after ${cfg.warmupS} s, ${cfg.aloneS} s of it alone are measured, then a second serve with the same settings is started and takes over; the load goes on ${cfg.tailS} s after the old server exits. ${cfg.reps} repetitions a case, each with a fresh pair of servers on the case's store. ` +
      `Times from the new process's spawn to its first "Server listening" line, to its "telling it to hand over" line (every worker listening) and to the old server's exit (the old one's wait, the \`ms\` of "took over", mostly its idle keep-alive connections, closed no sooner than their keep-alive timeout). ` +
      `CPU: both servers' process trees (workers included; /proc/<pid>/stat, and the old one's total when it exits) from the spawn to the old one's exit, less what the old one alone used in the same time under the same load (× one alone: the ratio of the two; where the machine stalls, the overlap lasts longer than the work in it and the difference can come out below 0), and of it the new server's own. ` +
      `Memory: the PSS of both trees (/proc/<pid>/smaps_rollup), its peak while both run against the median of the old one alone. Failed requests: no answer (reset, refused) or not 2xx, over the whole load of every repetition. Medians (range). ` +
      `Build ${machine.commit}${machine.srcChanged ? ' with uncommitted changes in src/' : ''}; ${machine.cpu}, ${machine.cores} cores, kernel ${machine.kernel}, Node ${machine.node}, net.ipv4.tcp_migrate_req=${machine.migrateReq}; load average ${machine.loadBefore.map((v) => v.toFixed(2)).join(' / ')} before, ${machine.loadAfter.map((v) => v.toFixed(2)).join(' / ')} after.`, '',
    '| store | WORKERS | start → listening ms | start → handover asked ms | start → old server exited ms | the old one\'s wait ms | CPU while both run: extra ms; × one alone | of it, the new server\'s ms | one alone: CPU ms/s | PSS MB: one alone → both, peak (extra) | failed requests |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...cases.map(({ store, workers, reps }) =>
      `| ${store} | ${workers} | ${spread(reps, (r) => r.ms.listening)} | ${spread(reps, (r) => r.ms.asked)} | ${spread(reps, (r) => r.ms.oldExited)} | ${spread(reps, (r) => r.ms.oldWait)} | ` +
      `${spread(reps, (r) => r.cpu.extraMs)}; ${fmt(median(reps.map((r) => r.cpu.ratio)), 2)}× | ${spread(reps, (r) => r.cpu.newMs)} | ${spread(reps, (r) => r.alone.cpuMsPerS)} | ` +
      `${fmt(median(reps.map((r) => r.alone.pssMb)))} → ${fmt(median(reps.map((r) => r.both.peakPssMb)))} (+${spread(reps, (r) => r.both.peakPssMb - r.alone.pssMb)}) | ${failed(reps)} |`),
    ...(skipped.length ? ['', ...skipped.map((s) => `Not run: ${s}.`)] : []),
    '',
  ];
}
