-- PATCH /plants/{id} (a JSON merge patch of the name) of plants that exist: ids BENCH_SEED_BASE + 1 ..
-- BENCH_SEED_BASE + BENCH_SEEDED, at random; every name differs from the stored one, so every request writes.
package.path = os.getenv("BENCH_WRK_DIR") .. "/?.lua;" .. package.path
require("common")

local counter = 0

function init(args)
  common_init()
  seeded_init()
  wrk.headers["Content-Type"] = "application/merge-patch+json"
end

function request()
  counter = counter + 1
  return wrk.format("PATCH", seeded_path(), nil,
    string.format('{"name":"Patched %d %d"}', tid, counter))
end
