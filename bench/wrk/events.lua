-- GET /events pages of the default limit, each following the Link of an earlier answer: a reader catching up.
--
-- wrk does not tell a script which connection a request goes out on, so the readers are kept as cursors rather
-- than connections: BENCH_CURSORS lists event ids spread over the feed ("" starts at its oldest event), one
-- reader each, at least as many as connections. request() takes a reader's next page; response() gives the
-- reader back with the answer's Link, or, at the feed's end (no Link), starts it again from the oldest event.
-- Each request is thus the next page of some reader, never a page asked twice in a row by the same reader.
package.path = os.getenv("BENCH_WRK_DIR") .. "/?.lua;" .. package.path
require("common")

local paths, head, tail = {}, 1, 0

local function push(path)
  tail = tail + 1
  paths[tail] = path
end

function init(args)
  common_init()
  for cursor in string.gmatch(os.getenv("BENCH_CURSORS") or "", "([^,]*)") do
    if cursor ~= "" then push("/events?after=" .. cursor) end
  end
  if tail == 0 then push("/events") end
end

function request()
  local path = paths[head]
  if path == nil then
    path = "/events"
  else
    paths[head] = nil
    head = head + 1
  end
  return wrk.format("GET", path)
end

local count = response
function response(status, headers, body)
  count(status, headers, body)
  local link = headers["link"]
  push(link and string.match(link, "^<([^>]+)>") or "/events")
end
