-- Commands of the stats socket in the idioms of the public scripts that
-- add them: a greeting with its arguments, a report of the backends and
-- servers (core.backends, get_stats, get_info), a server's weight and
-- state changed, and a command that fails.

core.register_cli({ "show", "greeting" }, "Show a greeting", function(applet, ...)
  local args = { ... }
  applet:send("hello " .. table.concat(args, "|") .. " (" .. #args .. ")\n")
  applet:send("second line\n")
end)

local function sorted_keys(t)
  local k = {}
  for n, _ in pairs(t) do k[#k + 1] = n end
  table.sort(k)
  return k
end

core.register_cli({ "lua", "backends" }, "List the backends", function(applet)
  for _, name in ipairs(sorted_keys(core.backends)) do
    local px = core.backends[name]
    local st = px:get_stats()
    applet:send(name .. " uuid=" .. px.uuid .. " mode=" .. px:get_mode() .. " cap=" ..
      px:get_cap() .. " status=" .. st.status .. " pxname=" .. st.pxname .. " stot=" ..
      st.stot .. " " .. type(st.stot) .. "\n")
    for _, sname in ipairs(sorted_keys(px.servers)) do
      local s = px.servers[sname]
      local ss = s:get_stats()
      applet:send("  " .. s.name .. " puid=" .. s.puid .. " addr=" .. s:get_addr() ..
        " weight=" .. s:get_weight() .. " status=" .. ss.status .. " svname=" ..
        ss.svname .. " draining=" .. tostring(s:is_draining()) .. "\n")
    end
  end
  applet:send("frontends=" .. table.concat(sorted_keys(core.frontends), ",") .. "\n")
  applet:send("proxies=" .. table.concat(sorted_keys(core.proxies), ",") .. "\n")
  local info = core.get_info()
  applet:send("info Nbthread=" .. info.Nbthread .. " Maxconn=" .. info.Maxconn .. " " ..
    type(info.Maxconn) .. " CurrConns=" .. info.CurrConns .. "\n")
end)

core.register_cli({ "lua", "weight" }, "Change a server", function(applet, _, _, w)
  local s = core.backends["be"].servers["s1"]
  applet:send("set " .. tostring(s:set_weight(w)) .. "\n")
  applet:send("weight now " .. s:get_weight() .. "\n")
  s:set_maint()
  applet:send("maint " .. s:get_stats().status .. "\n")
  s:set_ready()
  applet:send("ready " .. s:get_stats().status .. "\n")
  s:set_drain()
  applet:send("drain " .. s:get_stats().status .. " " .. tostring(s:is_draining()) .. "\n")
  s:set_ready()
  applet:send("ready " .. s:get_stats().status .. "\n")
end)

core.register_cli({ "lua", "broken" }, "Fail", function(applet)
  error("no such thing")
end)

core.register_cli({ "lua", "server" }, "Change a server's settings", function(applet)
  local s = core.backends["be"].servers["s2"]
  applet:send("maxconn " .. tostring(s:set_maxconn("20")) .. " " .. s:get_maxconn() .. "\n")
  applet:send("maxconn " .. tostring(s:set_maxconn("2x")) .. " " .. s:get_maxconn() .. "\n")
  applet:send("addr [" .. tostring(s:set_addr("127.0.0.9", 81)) .. "] " .. s:get_addr() .. "\n")
  applet:send("addr [" .. tostring(s:set_addr("nowhere")) .. "] " .. s:get_addr() .. "\n")
  s:check_disable()
  applet:send("checks off " .. s:get_stats().status .. "\n")
  s:agent_disable()
  s:shut_sess()
  applet:send("done\n")
end)
