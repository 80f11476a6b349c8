-- POST /plants, each request with an id no other request of the session uses, so every request inserts:
-- id = salt (one per wrk run) * 1e9 + thread * 1e7 + a per-thread counter, all below 2^53.
package.path = os.getenv("BENCH_WRK_DIR") .. "/?.lua;" .. package.path
require("common")

local counter, base = 0, 0

function init(args)
  common_init()
  base = tonumber(os.getenv("BENCH_SALT")) * 1e9 + tid * 1e7
  wrk.method = "POST"
  wrk.path = os.getenv("BENCH_PATH") or "/plants"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil, string.format('{"id":%d,"name":"Plant %d","tag":"bench"}', base + counter, counter))
end
