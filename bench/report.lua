-- The end-of-run report of bench/run's wrk scripts (get.lua, login.lua, which load this file with dofile):
-- one line that bench/run parses, so its format lives in one place.
--   BENCH rps=... requests=... p50_ms=... p90_ms=... p99_ms=... max_ms=... errors_status=... timeouts=...
--         errors_connect=... errors_read=... errors_write=...
-- errors_status is wrk's count of responses with a status of 400 or more.

function done(summary, latency, requests)
    local seconds = summary.duration / 1000000
    local e = summary.errors
    io.write(string.format(
        "BENCH rps=%.1f requests=%d p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f errors_status=%d timeouts=%d " ..
            "errors_connect=%d errors_read=%d errors_write=%d\n",
        summary.requests / seconds, summary.requests, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
        latency:percentile(99) / 1000, latency.max / 1000, e.status, e.timeout, e.connect, e.read, e.write))
end
