-- POST {"a":20,"b":22}: the provider's /function/add directly, or a consumer's
-- /function/relay (which makes one sv call to it). Prints the WRKRESULT line of
-- benches/load/report.lua.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "../load/report.lua")
post_json('{"a":20,"b":22}')
