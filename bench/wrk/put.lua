-- PUT /plants/{id} (the whole plant: name and tag) of plants that exist: ids BENCH_SEED_BASE + 1 ..
-- BENCH_SEED_BASE + BENCH_SEEDED, at random; every name differs from the stored one, so every request writes.
package.path = os.getenv("BENCH_WRK_DIR") .. "/?.lua;" .. package.path
require("common")

local seeded, seed_base, counter = 1, 0, 0

function init(args)
  common_init()
  seeded = tonumber(os.getenv("BENCH_SEEDED"))
  seed_base = tonumber(os.getenv("BENCH_SEED_BASE"))
  math.randomseed(tid * 7919 + os.time())
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  return wrk.format("PUT", string.format("/plants/%d", seed_base + math.random(1, seeded)), nil,
    string.format('{"name":"Put %d %d","tag":"bench"}', tid, counter))
end
