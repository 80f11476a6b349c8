-- Shared by the wrk scripts: the token header, status counting in response(), and one JSON line from done()
-- with the statuses summed over all threads (the row-count check compares them with the store).
local threads = {}
local next_tid = 0

function setup(thread)
  next_tid = next_tid + 1
  thread:set("tid", next_tid)
  table.insert(threads, thread)
end

-- BENCH_CONNECT_PAUSE_MS > 0 holds each connection's first request back that long, so the server has
-- accepted every connection before the load starts. A saturated Node.js server accepts one new connection
-- per event-loop turn, so without the pause the first request of the last of 256 fresh connections waits
-- hundreds of turns, and those waits, not steady-state latency, make the p99 of every saturated cell.
local pause_ms = tonumber(os.getenv("BENCH_CONNECT_PAUSE_MS") or "0")
local pending_first = tonumber(os.getenv("BENCH_CONNS") or "0")
if pause_ms > 0 then
  function delay()
    if pending_first > 0 then
      pending_first = pending_first - 1
      return pause_ms
    end
    return 0
  end
end

function common_init()
  statuses = {}
  wrk.headers["Authorization"] = "Bearer " .. (os.getenv("BENCH_TOKEN") or "")
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("statuses")) do total[k] = (total[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(total) do table.insert(parts, string.format('"%d":%d', k, v)) end
  local e = summary.errors
  -- latency is wrk 4.1's histogram after stats_correct() (its partial coordinated-omission correction).
  io.write(string.format(
    'BENCHJSON {"requests":%d,"bytes":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.1f,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"statuses":{%s}}\n',
    summary.requests, summary.bytes, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean, e.connect, e.read, e.write, e.status, e.timeout, table.concat(parts, ",")))
end

-- The seeded plants (ids BENCH_SEED_BASE + 1 .. BENCH_SEED_BASE + BENCH_SEEDED): seeded_init() in init(), then
-- seeded_path() gives one of their paths at random.
local seeded, seed_base = 1, 0

function seeded_init()
  seeded = tonumber(os.getenv("BENCH_SEEDED"))
  seed_base = tonumber(os.getenv("BENCH_SEED_BASE"))
  math.randomseed(tid * 7919 + os.time())
end

function seeded_path()
  return string.format("/plants/%d", seed_base + math.random(1, seeded))
end
