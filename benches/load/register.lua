-- POST /user/register with a new identity per request: user<N>-<thread>-r<run>@bench.local,
-- N counting per wrk thread, <thread> set by setup(), <run> from $BENCH_RUN (run.sh sets
-- a fresh value per wrk invocation; else the clock), so no two requests collide (a
-- duplicate would answer 409 and fail the run). One bcrypt hash per request.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
post_json("")

local threads = 0
function setup(thread)
   threads = threads + 1
   thread:set("tid", threads)
end

local run = os.getenv("BENCH_RUN") or tostring(os.time())
local n = 0
function request()
   n = n + 1
   local body = string.format(
      '{"identities":[{"type":"email","value":"user%d-%d-r%s@bench.local"}],' ..
      '"credential":{"type":"password","password":"bench-password"}}',
      n, tid or 0, run)
   return wrk.format(nil, nil, nil, body)
end
