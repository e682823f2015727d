-- Scripts that wait for I/O, in the idioms of the public ones: an auth
-- request (the request's credentials sent to an HTTP service whose
-- status decides, as haproxy-auth-request does), an audit POST, a
-- key-value lookup over a TCP socket, and a task that fetches a value at
-- start and keeps it in a map. The test writes in the key-value
-- service's address and the map file (the task runs when it has one).

local kv_addr, map = "@KV@", "@MAP@"

core.register_action("auth-request", { "http-req" }, function(txn, url)
  txn:set_var("txn.auth_ok", false)
  local hdrs = txn.http:req_get_headers()
  local headers = { ["x-original-uri"] = { txn.sf:path() } }
  if hdrs["authorization"] then
    headers["authorization"] = { hdrs["authorization"][0] }
  end
  local hc = core.httpclient()
  local res = hc:get{ url = url, headers = headers, timeout = 2000 }
  txn:set_var("txn.auth_status", res.status)
  txn:set_var("txn.auth_reason", res.reason)
  if res.status >= 200 and res.status < 300 then
    txn:set_var("txn.auth_ok", true)
    if res.headers["x-user"] then
      txn.http:req_set_header("x-user", res.headers["x-user"][0])
    end
  end
end, 1)

core.register_action("audit", { "http-req" }, function(txn, url)
  local hc = core.httpclient()
  local res = hc:post{ url = url .. "/audit", body = "path=" .. txn.sf:path() }
  txn:set_var("txn.audit", res.status .. " " .. res.body .. " " .. res.headers["content-length"][0])
end, 1)

local function split(addr)
  local host, port = string.match(addr, "^(.*):(%d+)$")
  return host, tonumber(port)
end

-- The service answers `GET <key>` with a status line, the value's length
-- on a line, the value, then a trailer until it closes.
core.register_action("lookup", { "http-req" }, function(txn)
  local s = core.tcp()
  s:settimeout(2)
  if not s:connect(split(kv_addr)) then
    txn:set_var("txn.kv", "down")
    return
  end
  local sent = s:send("GET " .. txn.sf:req_hdr("x-key") .. "\r\n")
  local status = s:receive("*l")
  local len = tonumber(s:receive("*l"))
  local value = s:receive(len)
  local rest = s:receive("*a")
  local after, err = s:receive("*l")
  s:close()
  txn:set_var("txn.kv", table.concat({ sent, status, value, "[" .. rest .. "]",
    tostring(after), tostring(err) }, " "))
end)

core.register_action("refused", { "http-req" }, function(txn, addr)
  local s = core.tcp()
  local ok, err = s:connect(split(addr))
  txn:set_var("txn.kv", tostring(ok) .. " " .. tostring(err))
end, 1)

if string.sub(map, 1, 1) ~= "@" then
  core.register_task(function()
    local s = core.tcp()
    s:settimeout(2)
    s:connect(split(kv_addr))
    s:send("GET motd\r\n")
    s:receive("*l")
    local value = s:receive(tonumber(s:receive("*l")))
    s:close()
    core.set_map(map, "motd", value)
  end)
end
