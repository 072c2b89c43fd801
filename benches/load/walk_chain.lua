-- POST /walker/walk_chain: visits the 100-node chain under root (build_chain first).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
post_json('{}')
