-- DELETE /plants/{id}, each request a plant no other request of the run deletes: ids BENCH_DELETE_FIRST,
-- BENCH_DELETE_FIRST + 1, ... in the order the requests go out (thread t starts BENCH_DELETE_PER_THREAD * (t - 1)
-- further on). The driver imports the plants before the run and starts the next run after the last id this one
-- may have sent. A 404 means the run went past the plants it had: it counts as non-2xx, so a cell that ran out
-- shows it rather than measuring cheap 404s.
package.path = os.getenv("BENCH_WRK_DIR") .. "/?.lua;" .. package.path
require("common")

local next_id = 0

function init(args)
  common_init()
  next_id = tonumber(os.getenv("BENCH_DELETE_FIRST")) + tonumber(os.getenv("BENCH_DELETE_PER_THREAD") or "0") * (tid - 1)
end

function request()
  next_id = next_id + 1
  return wrk.format("DELETE", string.format("/plants/%d", next_id - 1))
end
