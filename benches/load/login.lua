-- POST /user/login as the benchmark user (registered by run.sh), correct password: one
-- bcrypt verify per request. Successful logins do not count toward login throttling.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
post_json('{"identity":{"type":"email","value":"bench@bench.local"},' ..
          '"credential":{"type":"password","password":"bench-password"}}')
