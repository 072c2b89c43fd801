-- POST /walker/create_item: each call attaches one new Item node to root (a write).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
post_json('{"name":"bench"}')
