-- POST /function/add_numbers (svc and the bare server): two ints in, their sum out.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
post_json('{"a":20,"b":22}')
