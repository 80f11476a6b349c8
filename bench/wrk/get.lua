-- GET /plants/{id} of plants that exist: ids BENCH_SEED_BASE + 1 .. BENCH_SEED_BASE + BENCH_SEEDED, at random.
package.path = os.getenv("BENCH_WRK_DIR") .. "/?.lua;" .. package.path
require("common")

function init(args)
  common_init()
  seeded_init()
end

function request()
  return wrk.format("GET", seeded_path())
end
