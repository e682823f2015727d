-- A Proxy's methods on the running process: `GET /?<op>` runs <op> on the
-- proxies `fe2` (a frontend with two listeners), `bk` (a backend) or
-- `fe3` (whose backup server serves), then answers what they show.

local function keys(t)
  local k = {}
  for n, _ in pairs(t) do
    if n ~= "__index" then k[#k + 1] = tostring(n) end
  end
  table.sort(k)
  return table.concat(k, ",")
end

core.register_service("px", "http", function(applet)
  local fe, bk = core.proxies["fe2"], core.proxies["bk"]
  local op = applet.qs
  local out = {}
  local function r(what, v) out[#out + 1] = what .. "=" .. tostring(v) end
  if op == "pause" then r("pause", fe:pause())
  elseif op == "resume" then r("resume", fe:resume())
  elseif op == "stop" then r("stop", fe:stop())
  elseif op == "bkpause" then r("bkpause", bk:pause())
  elseif op == "bkstop" then r("bkstop", bk:stop())
  elseif op == "shut" then r("shut", core.proxies["fe3"]:shut_bcksess())
  end
  r("fe2", fe:get_stats().status)
  r("bk", bk:get_stats().status)
  r("methods", keys(getmetatable(fe).__index))
  r("listeners", keys(fe.listeners))
  r("bk.listeners", keys(bk.listeners))
  for name, l in pairs(fe.listeners) do
    -- (HAProxy 2.6's table holds another row's fields, not the
    -- listener's: only its type is compared.)
    r(name .. ".stats", type(l:get_stats()))
  end
  table.sort(out)
  local body = table.concat(out, " ") .. "\n"
  applet:set_status(200)
  applet:add_header("content-length", #body)
  applet:start_response()
  applet:send(body)
end)
