-- wrk script of bench/run.sh. The request comes from the environment: AT_TOKEN (a bearer
-- token, sent when set), BENCH_METHOD (GET) and BENCH_BODY (a JSON body). When the run
-- ends, one line is appended to the file BENCH_OUT:
--   BENCH_LABEL|requests/s|p50 ms|p99 ms|requests|non-2xx/3xx|socket errors
local token = os.getenv("AT_TOKEN")
if token and token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
local method = os.getenv("BENCH_METHOD")
if method and method ~= "" then wrk.method = method end
local body = os.getenv("BENCH_BODY")
if body and body ~= "" then
    wrk.body = body
    wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
    local f = assert(io.open(os.getenv("BENCH_OUT"), "a"))
    local e = summary.errors
    f:write(string.format("%s|%.1f|%.3f|%.3f|%d|%d|%d\n", os.getenv("BENCH_LABEL"),
        summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
        latency:percentile(99) / 1000, summary.requests, e.status,
        e.connect + e.read + e.write + e.timeout))
    f:close()
end
