-- GET /plants/{id} of plants that exist: ids BENCH_SEED_BASE + 1 .. BENCH_SEED_BASE + BENCH_SEEDED, at random.
package.path = os.getenv("BENCH_WRK_DIR") .. "/?.lua;" .. package.path
require("common")

local seeded, seed_base = 1, 0

function init(args)
  common_init()
  seeded = tonumber(os.getenv("BENCH_SEEDED"))
  seed_base = tonumber(os.getenv("BENCH_SEED_BASE"))
  math.randomseed(tid * 7919 + os.time())
end

function request()
  return wrk.format("GET", string.format("/plants/%d", seed_base + math.random(1, seeded)))
end
