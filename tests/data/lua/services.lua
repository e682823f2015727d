-- HTTP services in the idioms of the public scripts: an ACME HTTP-01
-- challenge responder (the key authorization of a token kept in a
-- table, as the acme.sh and certbot helpers for HAProxy keep theirs)
-- and the CORS pair: an action that checks the Origin against the allowed
-- ones (the rule's argument) and notes it for the response rules, and a
-- service answering the preflight OPTIONS.

local thumbprint = "tHuMbPrInT"
local tokens = { ["tok_1"] = true, ["Abc-123_x"] = true }

core.register_service("acme", "http", function(applet)
  local token = string.match(applet.path, "^/%.well%-known/acme%-challenge/([%w_-]+)$")
  if token == nil or not tokens[token] then
    applet:set_status(404)
    applet:start_response()
    applet:send("no such challenge\n")
    return
  end
  local body = token .. "." .. thumbprint
  applet:set_status(200)
  applet:add_header("content-type", "text/plain")
  applet:add_header("content-length", string.len(body))
  applet:start_response()
  applet:send(body)
end)

local function allowed(origin, list)
  for o in string.gmatch(list, "[^,]+") do
    if o == "*" or o == origin then return true end
  end
  return false
end

core.register_action("cors", { "http-req" }, function(txn, origins)
  local hdrs = txn.http:req_get_headers()
  local origin = hdrs["origin"] and hdrs["origin"][0]
  if origin ~= nil and allowed(origin, origins) then
    txn:set_var("txn.cors_origin", origin)
  end
end, 1)

-- The response side, under the same name: the allowed origin and Vary
-- on the server's answers; `x-status` asks for a new status (a test's
-- hook for res_set_status).
core.register_action("cors", { "http-res" }, function(txn)
  local origin = txn:get_var("txn.cors_origin")
  if origin ~= nil then
    txn.http:res_set_header("access-control-allow-origin", origin)
    txn.http:res_add_header("vary", "Origin")
  end
  local hdrs = txn.http:res_get_headers()
  if hdrs["x-status"] then
    txn.http:res_del_header("x-status")
    txn.http:res_set_status(tonumber(hdrs["x-status"][0]))
  end
end)

core.register_service("preflight", "http", function(applet)
  local origin = applet:get_var("txn.cors_origin")
  if origin == nil then
    applet:set_status(403)
  else
    applet:set_status(204)
    applet:add_header("access-control-allow-origin", origin)
    applet:add_header("access-control-allow-methods", "GET, POST, OPTIONS")
    applet:add_header("access-control-max-age", "600")
  end
  applet:start_response()
end)

core.register_service("broken", "http", function(applet)
  error("service broke")
end)

-- Sleeps before answering, its worker free meanwhile.
core.register_service("slow", "http", function(applet)
  core.msleep(30)
  applet:add_header("x-slept", "30")
  applet:start_response()
  applet:send("late")
  applet:send(" reply")
end)

-- Echoes what the client posted, read the ways the public services read
-- a body: its first line, two bytes, the rest, and nothing after that.
core.register_service("echo-body", "http", function(applet)
  local line = applet:getline()
  local two = applet:receive(2)
  local rest = applet:receive()
  local s = "line=[" .. line .. "] two=[" .. two .. "] rest=[" .. rest ..
    "] more=[" .. applet:receive() .. "] len=" .. tostring(applet.length) .. "\n"
  applet:set_status(200)
  applet:add_header("content-length", #s)
  applet:start_response()
  applet:send(s)
end)

-- A TCP service in the idiom of the line-based responders: a first
-- line, two bytes, then everything up to the client's close, each
-- answered as it is read.
core.register_service("lines", "tcp", function(applet)
  local first = applet:getline()
  applet:send("first=[" .. first .. "]\n")
  local two = applet:receive(2)
  applet:send("two=[" .. tostring(two) .. "]\n")
  applet:set_var("txn.seen", string.gsub(first, "%s+$", ""))
  local rest = applet:receive()
  applet:send("rest=[" .. rest .. "] var=" .. tostring(applet:get_var("txn.seen")) ..
    " src=" .. applet.sf:src() .. "\n")
  applet:send("after=[" .. applet:getline() .. "]\n")
end)
