-- PUT /plants/{id} (the whole plant: name and tag) of plants that exist: ids BENCH_SEED_BASE + 1 ..
-- BENCH_SEED_BASE + BENCH_SEEDED, at random; every name differs from the stored one, so every request writes.
package.path = os.getenv("BENCH_WRK_DIR") .. "/?.lua;" .. package.path
require("common")

local counter = 0

function init(args)
  common_init()
  seeded_init()
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  return wrk.format("PUT", seeded_path(), nil,
    string.format('{"name":"Put %d %d","tag":"bench"}', tid, counter))
end
