-- Actions, a fetch and a converter in the idioms of the public scripts:
-- header edits and variables from the TXN object, HAProxy's fetches and
-- converters called by name, results returned as act.* codes.

-- Tags the request for its server: who asked (the rule's argument), the
-- client's user agent and the path, read back through the fetches.
core.register_action("tag", { "http-req" }, function(txn, who)
  local hdrs = txn.http:req_get_headers()
  local ua = hdrs["user-agent"] and hdrs["user-agent"][0] or "none"
  txn.http:req_set_header("x-lua", "hello " .. who)
  txn.http:req_add_header("x-lua-ua", ua)
  txn.http:req_del_header("x-drop")
  txn:set_var("txn.path", txn.sf:path())
  txn:set_var("txn.low", txn.c:lower("ABC"))
  txn:set_var("txn.host", txn.f:req_hdr("host"))
end, 1)

-- Rewrites the request line.
core.register_action("move", { "http-req" }, function(txn)
  txn.http:req_set_method("PUT")
  txn.http:req_set_path("/moved")
  txn.http:req_set_query("from=lua")
end)

core.register_action("deny", { "http-req" }, function(txn)
  return act.DENY
end)

-- A script error: the action stops, the request goes on.
core.register_action("boom", { "http-req" }, function(txn)
  error("bad thing")
end)

-- A runaway script: stopped by tune.lua.session-timeout, its worker
-- serving other requests meanwhile.
core.register_action("spin", { "http-req" }, function(txn)
  while true do end
end)

-- Sleeps without holding the worker, then reads the request again.
core.register_action("nap", { "http-req" }, function(txn)
  core.msleep(20)
  txn:set_var("txn.napped", "yes-" .. txn.sf:path())
end)

-- `lua.greet(<who>)`: a fetch reading the request through the TXN object.
core.register_fetches("greet", function(txn, who)
  return "hi-" .. who .. "-" .. txn.sf:req_hdr("host")
end)

-- `lua.rev(<suffix>)`: a converter.
core.register_converters("rev", function(s, suffix)
  return string.reverse(s) .. (suffix or "")
end)

-- A content gate in `mode tcp`: the first bytes decide.
core.register_action("gate", { "tcp-req" }, function(txn)
  local first = txn.f:req_payload(0, 3)
  if first == "BAD" then
    return act.DENY
  end
  txn:set_var("txn.first", first)
end)

-- Waits before it lets the connection through, its worker free
-- meanwhile, and looks at what came by then.
core.register_action("napgate", { "tcp-req" }, function(txn)
  core.msleep(10)
  txn:set_var("txn.napped", "slept-" .. txn.sf:req_len())
end)

-- A content action of an HTTP proxy that waits, then notes the client.
core.register_action("napsrc", { "tcp-req" }, function(txn)
  core.msleep(5)
  txn:set_var("txn.napsrc", txn.sf:src())
end)

-- A response action that waits (a sleep, a yield), then stamps the
-- response with what it reads of it, or ends as the server's `x-act`
-- field says.
core.register_action("napres", { "http-res" }, function(txn)
  core.msleep(20)
  core.yield()
  local hdrs = txn.http:res_get_headers()
  local a = hdrs["x-act"] and hdrs["x-act"][0]
  if a == "deny" then
    return act.DENY
  elseif a == "error" then
    return act.ERROR
  elseif a == "done" then
    return act.DONE
  elseif a == "invalid" then
    return act.INVALID
  elseif a == "stop" then
    return act.STOP
  elseif a == "abort" then
    return act.ABORT
  elseif a == "close" then
    txn:done()
  end
  txn.http:res_set_header("x-napped", "status-" .. txn.f:status())
  txn:set_var("txn.resnap", "yes")
end)

-- Answers made by the script, as auth and CORS scripts make them: a
-- Reply object from its table, then changed, sent by txn:done().
core.register_action("answer", { "http-req" }, function(txn, kind)
  if kind == "table" then
    local r = txn:reply({ status = 403, headers = { ["x-a"] = { "1", "2" } }, body = "denied\n" })
    r:add_header("x-a", "3")
    txn:done(r)
  elseif kind == "built" then
    local r = txn:reply()
    r:set_status(401, "Auth")
    r:add_header("www-authenticate", 'Basic realm="x"')
    r:del_header("x-none")
    r:set_body("no")
    txn:done(r)
  elseif kind == "empty" then
    txn:done(txn:reply())
  elseif kind == "fields" then
    local r = txn:reply({ status = 302 })
    txn:set_var("txn.fields", "status=" .. tostring(r.status) .. " reason=" .. tostring(r.reason)
      .. " body=" .. tostring(r.body))
  end
end, 1)

-- The server's answer replaced by the script's.
core.register_action("reanswer", { "http-res" }, function(txn)
  txn:done(txn:reply({ status = 503, body = "gone" }))
end)

-- The request's queue priority and the client socket's marks.
core.register_action("prio", { "http-req" }, function(txn)
  txn:set_priority_class(5)
  txn:set_priority_offset(-100000000)
  txn:set_tos(16)
  txn:set_mark(7)
end)
