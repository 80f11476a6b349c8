-- PATCH /plants/{id} with If-Match: each request names the version the previous answer for that plant gave,
-- so every request should write (200) and none should fail its precondition (412).
--
-- wrk does not tell a script which connection a request goes out on, so "each connection owns a plant" is
-- kept by the plants rather than the connections: BENCH_ETAGS lists one plant more than there are connections
-- ("id:etag,id:etag,...", read by the driver just before the run; wrk 4.1 calls request() once before the run to
-- check the script, and that plant never comes back). request() takes a plant that has
-- no request in flight and sends its last known ETag; response() reads the plant's id from the answer (the body
-- of a 200, the message of a 412) and gives the plant back with the answer's ETag. At most one request per plant
-- is ever in flight, as with a client per plant that reads its own answer before writing again, so a 412 means
-- the service lost or misordered a version. Each of wrk's threads needs its own plants: run with one thread.
package.path = os.getenv("BENCH_WRK_DIR") .. "/?.lua;" .. package.path
require("common")

local free, head, tail, etags, counter = {}, 1, 0, {}, 0

function init(args)
  common_init()
  for id, etag in string.gmatch(os.getenv("BENCH_ETAGS") or "", "(%d+):([^,]+)") do
    tail = tail + 1
    free[tail] = id
    etags[id] = etag
  end
  wrk.headers["Content-Type"] = "application/merge-patch+json"
end

function request()
  counter = counter + 1
  local id = free[head]
  if id == nil then
    -- More requests in flight than plants: only when BENCH_ETAGS is too short. The 412 that follows shows in
    -- the statuses.
    id = next(etags)
  else
    free[head] = nil
    head = head + 1
  end
  wrk.headers["If-Match"] = etags[id]
  return wrk.format("PATCH", "/plants/" .. id, nil, string.format('{"name":"Patched %d"}', counter))
end

local count = response
function response(status, headers, body)
  count(status, headers, body)
  local id = string.match(body, '^{"id":(%d+)') or string.match(body, "Plant (%d+) ")
  if id and etags[id] then
    if headers["etag"] then etags[id] = headers["etag"] end
    tail = tail + 1
    free[tail] = id
  end
end
