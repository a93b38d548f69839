-- wrk script for bench/soak: mixed traffic at a fixed rate, every answer classified.
--
-- Environment:
--   BENCH_KEY      API key (sent as `Authorization: Bearer ...`)
--   SOAK_ACCOUNTS  a file of "kind owner token session" lines, kind `stable` (read by status, lists and pictures,
--                  never logged out) or `churn` (logged in and out); tokens stay in files, never on a command line
--   SOAK_DELAY_MS  pause of each connection before each request (0: as fast as possible), which sets the rate
--
-- The mix, per 100 requests: 62 status (validate=auto), 4 status (validate=always), 10 owner lists, 10 pictures,
-- 5 event pages, 6 logins of a churn account with its own token (200 updated, or 201 after a logout), 3 logouts
-- of every session of a churn owner.
-- done() prints one line that bench/soak parses:
--   SOAK rps=... requests=... p50_ms=... p90_ms=... p99_ms=... ok=... clean503=... bad=... timeouts=... socket=...
-- ok: 2xx and 304. clean503: 503 with Retry-After (Graph or the database unavailable, as during injected
-- faults). bad: anything else.

local key = os.getenv("BENCH_KEY") or ""
local delay_ms = tonumber(os.getenv("SOAK_DELAY_MS") or "0")
local auth = { ["Authorization"] = "Bearer " .. key }
local json = { ["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json" }

local stable, churn = {}, {}
for line in io.lines(os.getenv("SOAK_ACCOUNTS")) do
    local kind, owner, token, session = line:match("^(%S+) (%S+) (%S+) (%S+)$")
    if kind then
        local list = kind == "stable" and stable or churn
        list[#list + 1] = { owner = owner, token = token, session = session }
    end
end

local threads = {}
function setup(thread)
    threads[#threads + 1] = thread
    thread:set("seed", #threads)
end

function init(args)
    math.randomseed(os.time() * 1000 + (seed or 0))
    ok, clean503, bad = 0, 0, 0
end

function delay()
    return delay_ms
end

function request()
    local account = stable[math.random(1, #stable)]
    local pick = math.random(1, 100)
    if pick <= 62 then
        return wrk.format("GET", "/v1/sessions/" .. account.session, auth)
    elseif pick <= 66 then
        return wrk.format("GET", "/v1/sessions/" .. account.session .. "?validate=always", auth)
    elseif pick <= 76 then
        return wrk.format("GET", "/v1/owners/" .. account.owner .. "/sessions", auth)
    elseif pick <= 86 then
        return wrk.format("GET", "/v1/sessions/" .. account.session .. "/picture", auth)
    elseif pick <= 91 then
        return wrk.format("GET", "/v1/events?limit=20", auth)
    end
    account = churn[math.random(1, #churn)]
    if pick <= 97 then
        local body = '{"owner":"' .. account.owner .. '","access_token":"' .. account.token .. '","slot":0}'
        return wrk.format("POST", "/v1/sessions", json, body)
    end
    return wrk.format("DELETE", "/v1/owners/" .. account.owner .. "/sessions", auth)
end

function response(status, headers, body)
    if (status >= 200 and status < 300) or status == 304 then
        ok = ok + 1
    elseif status == 503 and (headers["Retry-After"] or headers["retry-after"]) then
        clean503 = clean503 + 1
    else
        bad = bad + 1
        if bad <= 3 then
            io.stderr:write(string.format("soak: unexpected %d: %s\n", status, string.sub(body or "", 1, 200)))
        end
    end
end

function done(summary, latency, requests)
    local total_ok, total_clean, total_bad = 0, 0, 0
    for _, thread in ipairs(threads) do
        total_ok = total_ok + thread:get("ok")
        total_clean = total_clean + thread:get("clean503")
        total_bad = total_bad + thread:get("bad")
    end
    local e = summary.errors
    local seconds = summary.duration / 1000000
    io.write(string.format(
        "SOAK rps=%.1f requests=%d p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f ok=%d clean503=%d bad=%d timeouts=%d socket=%d\n",
        summary.requests / seconds, summary.requests, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
        latency:percentile(99) / 1000, total_ok, total_clean, total_bad, e.timeout, e.connect + e.read + e.write))
end
