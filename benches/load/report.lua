-- Shared by the per-target scripts: POST a JSON body, and at the end print one
-- machine-readable line that run.sh parses (latencies in microseconds; mean_us is the mean
-- latency, which run.sh uses for the closed-loop rate of the bcrypt-bound targets).
-- errors.status counts responses with status >= 400; run.sh fails the run if any
-- error counter is non-zero.

function post_json(body)
   wrk.method = "POST"
   wrk.body = body
   wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "WRKRESULT requests=%d duration_us=%d rps=%.2f p50_us=%d p99_us=%d mean_us=%d " ..
      "connect=%d read=%d write=%d timeout=%d status=%d\n",
      summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
      latency:percentile(50), latency:percentile(99), math.floor(latency.mean),
      e.connect, e.read, e.write, e.timeout, e.status))
end
