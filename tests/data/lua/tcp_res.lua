-- `tcp-response content` actions: the server's bytes held, read and
-- edited through txn.res, with and without a delay to wait in.

core.register_action("res-peek", { "tcp-res" }, function(txn)
  local r = txn.res
  core.msleep(10)
  txn:set_var("txn.peek", string.format(
    "in=%d out=%d inlen=%d full=%s resp=%s recv=%s line=[%s] head=[%s] tail=[%s] mid=[%s] http=%s req=%s",
    r:input(), r:output(), r:get_in_len(), tostring(r:is_full()), tostring(r:is_resp()),
    tostring(r:may_recv()), r:line(), r:data(0, 8), r:data(-2), r:line(9, 3), tostring(txn.http),
    tostring(txn.req:is_resp())))
end)

core.register_action("res-rewrite", { "tcp-res" }, function(txn, tag)
  local r = txn.res
  local status = r:getline()
  core.yield()
  local n = {}
  n[#n + 1] = r:prepend("HTTP/1.1 201 Lua\r\n")
  n[#n + 1] = r:insert("x-tag: " .. tag .. "\r\n", 18)
  n[#n + 1] = r:remove(-2)
  n[#n + 1] = r:insert("END", r:input())
  -- HAProxy 2.6's append copies in front, as prepend does.
  n[#n + 1] = r:append("<")
  n[#n + 1] = r:set("Content", 1 + 18 + #tag + 9, 7)
  txn:set_var("txn.rw", string.format("was=[%s] %s", status, table.concat(n, ",")))
end, 1)

core.register_action("res-yield", { "tcp-res" }, function(txn)
  core.yield()
  txn:set_var("txn.yielded", "yes")
end)

core.register_action("res-nap", { "tcp-res" }, function(txn)
  core.msleep(5)
  txn:set_var("txn.napped", "yes")
end)

core.register_action("res-deny", { "tcp-res" }, function(txn)
  if txn.res:data():find("200 OK", 1, true) then return act.DENY end
end)
