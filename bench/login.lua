-- wrk script for bench/run's login rows: POST /v1/sessions, each request a new owner and the next Facebook user
-- token from a list the emulator issued, so that no two logins in flight are for the same owner or user.
--
-- Environment (read here, so that no key or token shows on a command line or in bench/out/commands.log):
--   BENCH_KEY      API key (`Authorization: Bearer ...`)
--   BENCH_TOKENS   a file with one emulator user token per line (bench/run writes it mode 600)
--   BENCH_TAG      makes the owner names of this run unique (`login-TAG-THREAD-N`)
--
-- Thread k of n takes the lines k, k+n, k+2n, ... and cycles through them; a token used again after the list
-- has wrapped logs its user in for another owner, which is a distinct login.
-- done() (bench/report.lua) prints the BENCH line that bench/run parses.

local key = os.getenv("BENCH_KEY") or ""
local tag = os.getenv("BENCH_TAG") or "0"
local threads = 0

function setup(thread)
    threads = threads + 1
    thread:set("index", threads)
end

local mine = {}
local position = 0
local counter = 0
local headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. key }

function init(args)
    local total = tonumber(os.getenv("BENCH_THREADS") or "1")
    local file = assert(io.open(os.getenv("BENCH_TOKENS"), "r"))
    local line_number = 0
    for line in file:lines() do
        if line ~= "" then
            if line_number % total == (index - 1) then
                mine[#mine + 1] = line
            end
            line_number = line_number + 1
        end
    end
    file:close()
    assert(#mine > 0, "login.lua: no tokens for this thread")
end

function request()
    position = position % #mine + 1
    counter = counter + 1
    local body = string.format('{"owner":"login-%s-%d-%d","access_token":"%s"}', tag, index, counter, mine[position])
    return wrk.format("POST", "/v1/sessions", headers, body)
end

-- done(): the BENCH line bench/run parses, shared with the other row scripts (bench/report.lua).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "report.lua")
