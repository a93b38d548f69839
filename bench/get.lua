-- wrk script for bench/run's GET rows. Every row, ceilings included, goes through request(), so the client's
-- per-request cost is the same on both sides of a ratio. For that, a row over many session ids must cost the client
-- no more than a fixed path: its requests are formatted once, in init(), and request() picks one (building each
-- request with wrk.format cost wrk about 1 us more per request, CPU taken from the service on a shared machine).
--
-- Environment (read here, so that the key never shows on a command line or in bench/out/commands.log):
--   BENCH_KEY         API key, sent as `Authorization: Bearer ...` when set
--   BENCH_PATH        the path and query; `{id}` in it is replaced by a random loaded session id
--   BENCH_IDS         how many loaded sessions there are (ids ses_bench000000000001 ... ses_benchNNNNNNNNNNNN)
--   BENCH_ETAG        sent as `If-None-Match` when set
--   BENCH_PACE_MS     when set, each connection waits this long after a response before its next request: a fixed
--                     offered rate (connections x 1000 / BENCH_PACE_MS per second) well under capacity, so that
--                     latency is the service's own rather than the queue of a closed loop run flat out
--
-- done() (bench/report.lua) prints the BENCH line that bench/run parses.

local path = os.getenv("BENCH_PATH") or "/"
local ids = tonumber(os.getenv("BENCH_IDS") or "0")
local headers = {}
local key = os.getenv("BENCH_KEY")
if key and key ~= "" then
    headers["Authorization"] = "Bearer " .. key
end
local etag = os.getenv("BENCH_ETAG")
if etag and etag ~= "" then
    headers["If-None-Match"] = etag
end

local pace = tonumber(os.getenv("BENCH_PACE_MS") or "0")
if pace > 0 then
    -- wrk calls delay() before every request when the script defines it.
    function delay()
        return pace
    end
end

local fixed = nil
local prefix, suffix = path:match("^(.-){id}(.*)$")
-- Up to this many ids, every request is formatted in init() (about 200 bytes each, per thread); above it, a request
-- is the formatted text around the id with the id's digits put in, one concatenation.
local preformatLimit = 200000
local requests = nil
local head, tail = nil, nil

local threads = 0
function setup(thread)
    threads = threads + 1
    thread:set("seed", threads)
end

function init(args)
    -- Each thread draws its own sequence (the threads' Lua states start alike).
    math.randomseed(os.time() * 100 + (seed or 0))
    if not prefix then
        fixed = wrk.format("GET", path, headers)
    elseif ids <= preformatLimit then
        requests = {}
        for n = 1, ids do
            requests[n] = wrk.format("GET", string.format("%sses_bench%012d%s", prefix, n, suffix), headers)
        end
    else
        local template = wrk.format("GET", prefix .. "ses_bench{id}" .. suffix, headers)
        local at = template:find("{id}", 1, true)
        head, tail = template:sub(1, at - 1), template:sub(at + 4)
    end
end

function request()
    if fixed then
        return fixed
    end
    if requests then
        return requests[math.random(1, ids)]
    end
    return head .. string.format("%012d", math.random(1, ids)) .. tail
end

-- done(): the BENCH line bench/run parses, shared with the other row scripts (bench/report.lua).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "report.lua")
