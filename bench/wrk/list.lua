-- GET /plants?limit=100 (BENCH_PATH overrides it for a peer that names the parameter differently).
package.path = os.getenv("BENCH_WRK_DIR") .. "/?.lua;" .. package.path
require("common")

function init(args)
  common_init()
  wrk.path = os.getenv("BENCH_PATH") or "/plants?limit=100"
  -- BENCH_PREFER: a Prefer header (count=exact for the find cells).
  local prefer = os.getenv("BENCH_PREFER")
  if prefer and prefer ~= "" then wrk.headers["Prefer"] = prefer end
end
