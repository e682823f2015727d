-- The parts of HAProxy's Lua API written in Lua itself: the TXN, HTTP,
-- Fetches and Converters objects, and the core functions that yield.
-- `S.call(<primitive>, ...)` is the function sluice sets for the time of
-- each run or resume of a script, over the request's primitives.
local S, SLEEP, IO = ...

function core.sleep(s) coroutine.yield(SLEEP, math.floor(s * 1000)) end
function core.msleep(ms) coroutine.yield(SLEEP, math.floor(ms)) end
-- Where the script may not wait, HAProxy goes on at once.
function core.yield()
  if coroutine.isyieldable() then coroutine.yield(SLEEP, 0) end
end

-- Fetches and converters by the names HAProxy gives their methods ('.'
-- written '_'); `sf`, `sc`: the string form, "" for no value. The
-- primitive is looked up at each call (S's change with each resume), so
-- the four objects are made once and shared by every TXN.
local function methods(prim, strings)
  return setmetatable({}, { __index = function(_, k)
    return function(_, ...) return S.call(prim, k, strings, ...) end
  end })
end
local F, SF = methods("fetch", false), methods("fetch", true)
local C, SC = methods("convert", false), methods("convert", true)

local function hdrs_table(list)
  -- HAProxy's form: hdr[name][0], hdr[name][1]... in the message's order.
  local t, n = {}, {}
  for _, h in ipairs(list) do
    local name, value = h[1], h[2]
    local i = n[name] or 0
    if i == 0 then t[name] = {} end
    t[name][i] = value
    n[name] = i + 1
  end
  return t
end

local HTTP = {}
HTTP.__index = HTTP
function HTTP:req_get_headers() return hdrs_table(S.call("headers", false)) end
function HTTP:res_get_headers() return hdrs_table(S.call("headers", true)) end
function HTTP:req_add_header(n, v) S.call("add_header", false, n, v) end
function HTTP:res_add_header(n, v) S.call("add_header", true, n, v) end
function HTTP:req_set_header(n, v) S.call("del_header", false, n); S.call("add_header", false, n, v) end
function HTTP:res_set_header(n, v) S.call("del_header", true, n); S.call("add_header", true, n, v) end
function HTTP:req_del_header(n) S.call("del_header", false, n) end
function HTTP:res_del_header(n) S.call("del_header", true, n) end
function HTTP:req_rep_header(n, re, r) S.call("rep_header", false, n, re, r, false) end
function HTTP:res_rep_header(n, re, r) S.call("rep_header", true, n, re, r, false) end
function HTTP:req_rep_value(n, re, r) S.call("rep_header", false, n, re, r, true) end
function HTTP:res_rep_value(n, re, r) S.call("rep_header", true, n, re, r, true) end
function HTTP:req_set_method(m) S.call("set_target", "method", m) end
function HTTP:req_set_path(p) S.call("set_target", "path", p) end
function HTTP:req_set_query(q) S.call("set_target", "query", q) end
function HTTP:req_set_uri(u) S.call("set_target", "uri", u) end
function HTTP:res_set_status(code, reason) S.call("set_status", code, reason) end

-- HAProxy's HttpClient: each method sends one request and waits for
-- its response (`IO` yields: the worker serves others meanwhile).
local HC = {}
HC.__index = HC
local function hc_send(method)
  return function(_, req)
    if type(req) ~= "table" then error("httpclient: a request table is expected", 2) end
    local flat = {}
    if type(req.headers) == "table" then
      for name, vals in pairs(req.headers) do
        if type(vals) == "table" then
          for _, v in pairs(vals) do flat[#flat + 1] = { tostring(name), tostring(v) } end
        end
      end
    end
    local status, reason, hdrs, body =
      coroutine.yield(IO, "http", method, req.url, flat, req.body, req.timeout, req.dst)
    if status == nil then error(reason, 2) end
    return { status = status, reason = reason, headers = hdrs_table(hdrs), body = body }
  end
end
HC.get, HC.head, HC.put = hc_send("GET"), hc_send("HEAD"), hc_send("PUT")
HC.post, HC.delete = hc_send("POST"), hc_send("DELETE")
function core.httpclient() return setmetatable({}, HC) end

-- HAProxy's Socket (`core.tcp()`), as LuaSocket's: its number among its
-- coroutine's sockets once connected, its timeout in seconds.
local SOCK = {}
SOCK.__index = SOCK
function core.tcp() return setmetatable({}, SOCK) end
function SOCK:settimeout(t) self.timeout = tonumber(t); return 1 end
function SOCK:connect(host, port)
  local id, err = coroutine.yield(IO, "connect", host, port, self.timeout)
  if id == nil then return nil, err end
  self.id = id
  return 1
end
function SOCK:send(data, i, j)
  if self.id == nil then return nil, "connection closed." end
  data = tostring(data)
  if i ~= nil then data = string.sub(data, i, j or -1) end
  return coroutine.yield(IO, "send", self.id, data, self.timeout)
end
function SOCK:receive(pattern, prefix)
  if self.id == nil then return nil, "connection closed." end
  return coroutine.yield(IO, "receive", self.id, pattern, prefix, self.timeout)
end
function SOCK:close()
  if self.id ~= nil then coroutine.yield(IO, "close", self.id); self.id = nil end
end
function SOCK:getpeername()
  if self.id == nil then return nil end
  return coroutine.yield(IO, "peer", self.id)
end
function SOCK:getsockname()
  if self.id == nil then return nil end
  return coroutine.yield(IO, "name", self.id)
end

-- What a script sees of the running process: `show info`'s fields, the
-- proxies and their servers (`S.info`, `S.px` and `S.srv` read them at
-- each call), made once the process started (`set_proxies`).
function core.get_info() return S.info() end
local PROXY, SERVER = {}, {}
PROXY.__index, SERVER.__index = PROXY, SERVER
function PROXY:get_stats() return S.px("stats", self.name) end
function PROXY:get_cap() return S.px("cap", self.name) end
function PROXY:get_mode() return S.px("mode", self.name) end
function PROXY:pause() return S.px("pause", self.name) end
function PROXY:resume() return S.px("resume", self.name) end
function PROXY:stop() return S.px("stop", self.name) end
function PROXY:shut_bcksess() return S.px("shut_bcksess", self.name) end
-- HAProxy 2.6's Listener:get_stats() gives a table that pairs() finds
-- empty.
local LISTENER = {}
LISTENER.__index = LISTENER
function LISTENER:get_stats() return {} end
local function srv(op) return function(self, arg) return S.srv(op, self.__px, self.name, arg) end end
SERVER.get_stats, SERVER.get_addr, SERVER.get_weight = srv("stats"), srv("addr"), srv("weight")
SERVER.set_weight, SERVER.get_maxconn, SERVER.is_draining = srv("set_weight"), srv("maxconn"), srv("draining")
SERVER.set_maint, SERVER.set_drain, SERVER.set_ready = srv("maint"), srv("drain"), srv("ready")
SERVER.set_maxconn, SERVER.shut_sess = srv("set_maxconn"), srv("shut_sess")
function SERVER:set_addr(addr, port)
  local a = tostring(addr)
  if port ~= nil then a = a .. " " .. tostring(port) end
  return S.srv("set_addr", self.__px, self.name, a)
end
for _, op in ipairs({ "check_enable", "check_disable", "check_force_up", "check_force_nolb",
    "check_force_down", "agent_enable", "agent_disable", "agent_force_up", "agent_force_down" }) do
  SERVER[op] = srv(op)
end
local function set_proxies(list)
  local all, fes, bes = {}, {}, {}
  for _, p in ipairs(list) do
    local servers = {}
    for _, s in ipairs(p.servers) do
      servers[s.name] = setmetatable({ name = s.name, puid = s.puid, __px = p.name }, SERVER)
    end
    local listeners = {}
    for _, name in ipairs(p.listeners) do listeners[name] = setmetatable({}, LISTENER) end
    local px = setmetatable({ name = p.name, uuid = p.uuid, servers = servers, listeners = listeners }, PROXY)
    all[p.name] = px
    if p.fe then fes[p.name] = px end
    if p.be then bes[p.name] = px end
  end
  core.proxies, core.frontends, core.backends = all, fes, bes
end

-- The applet of a `core.register_cli` function: what it sends is the
-- command's answer.
local CLI = {}
CLI.__index = CLI
function CLI:send(d) S.call("svc_send", tostring(d)) end
local function new_cli() return setmetatable({}, CLI) end

-- HAProxy's Channel: the request's or the response's bytes a TCP rule
-- holds (`res`), read and edited by the primitive `chan`.
local CHAN = {}
CHAN.__index = CHAN
local function chan(op) return function(self, a, b, c) return S.call("chan", self.res, op, a, b, c) end end
for _, op in ipairs({ "dup", "get", "getline", "data", "line", "set", "insert", "append",
    "remove", "input", "output", "may_recv" }) do
  CHAN[op] = chan(op)
end
CHAN.is_full = chan("full")
CHAN.get_in_len, CHAN.get_out_len = CHAN.input, CHAN.output
function CHAN:prepend(s) return S.call("chan", self.res, "insert", s, 0) end
function CHAN:is_resp() return self.res end
local REQ_CHAN = setmetatable({ res = false }, CHAN)
local RES_CHAN = setmetatable({ res = true }, CHAN)

-- The one HTTP object (its methods keep no state of their own).
local HTTP_OBJ = setmetatable({}, HTTP)

local TXN = {}
TXN.__index = TXN
function TXN:get_var(name) return S.call("get_var", name) end
function TXN:set_var(name, value, ifexist) S.call("set_var", name, value, ifexist) end
function TXN:unset_var(name) S.call("unset_var", name) end
function TXN:set_priv(v) self.__priv = v end
function TXN:get_priv() return self.__priv end
function TXN:done(reply) S.call("done", reply); coroutine.yield(SLEEP, -1) end
function TXN:set_priority_class(n) S.call("priority", false, n) end
function TXN:set_priority_offset(n) S.call("priority", true, n) end
function TXN:set_tos(v) S.call("sockmark", false, v) end
function TXN:set_mark(v) S.call("sockmark", true, v) end
-- HAProxy's log line at the proxy's own level.
function TXN:deflog(msg) S.call("log", core.info, msg) end

-- The Reply object of `txn:reply()`, sent by `txn:done(reply)`: its
-- header fields by name, each a list of values.
local REPLY = {}
REPLY.__index = REPLY
function REPLY:set_status(code, reason) self.status = code; self.reason = reason end
function REPLY:add_header(n, v)
  local l = self.headers[n]
  if not l then l = {}; self.headers[n] = l end
  l[#l + 1] = tostring(v)
end
function REPLY:del_header(n) self.headers[n] = nil end
function REPLY:set_body(b) self.body = b end
-- As HAProxy 2.6: the reason is the status's own (a `reason` in `t` is
-- not read), the header lists are copied.
function TXN:reply(t)
  local r = setmetatable({ status = 200, headers = {} }, REPLY)
  if t then
    r.status = t.status or 200
    r.body = t.body
    for n, v in pairs(t.headers or {}) do
      if type(v) == "table" then
        for _, x in ipairs(v) do r:add_header(n, x) end
      else
        r:add_header(n, v)
      end
    end
  end
  r.reason = S.call("reason", r.status)
  return r
end
function TXN:set_loglevel(l) S.call("set_loglevel", l) end
function TXN:log(level, msg) S.call("log", level, msg) end
function TXN:Debug(msg) S.call("log", core.debug, msg) end
function TXN:Info(msg) S.call("log", core.info, msg) end
function TXN:Warning(msg) S.call("log", core.warning, msg) end
function TXN:Alert(msg) S.call("log", core.alert, msg) end

-- The AppletHTTP object of an HTTP service: the request's line and
-- headers, and the response it composes (sent when the service ends).
local APPLET = {}
APPLET.__index = APPLET
function APPLET:set_status(code, reason) S.call("svc_status", code, reason) end
function APPLET:add_header(n, v) S.call("svc_header", n, tostring(v)) end
function APPLET:start_response() S.call("svc_start") end
function APPLET:send(d) S.call("svc_send", tostring(d)) end
function APPLET:receive(n) return S.call("svc_receive", n) end
function APPLET:getline() return S.call("svc_getline") end
APPLET.get_var = TXN.get_var
APPLET.set_var = TXN.set_var
APPLET.unset_var = TXN.unset_var
APPLET.set_priv = TXN.set_priv
APPLET.get_priv = TXN.get_priv

-- The AppletTCP object of a TCP service: the client connection, read
-- and written as the script waits (`IO` yields).
local TAPPLET = {}
TAPPLET.__index = TAPPLET
function TAPPLET:receive(n) return coroutine.yield(IO, "applet_receive", n) end
function TAPPLET:getline() return coroutine.yield(IO, "applet_getline") end
function TAPPLET:send(d) coroutine.yield(IO, "applet_send", tostring(d)) end
TAPPLET.get_var = TXN.get_var
TAPPLET.set_var = TXN.set_var
TAPPLET.unset_var = TXN.unset_var
TAPPLET.set_priv = TXN.set_priv
TAPPLET.get_priv = TXN.get_priv

local function new_applet_tcp()
  return setmetatable({ f = F, sf = SF, c = C, sc = SC }, TAPPLET)
end

local function new_applet()
  local method, path, qs, version, length = S.call("request")
  return setmetatable({
    f = F, sf = SF, c = C, sc = SC,
    method = method, path = path, qs = qs, version = version, length = length,
    headers = hdrs_table(S.call("headers", false)),
  }, APPLET)
end

-- HAProxy's traceback of an error: each frame from the one that raised
-- it to the registered function, as "file:line: in <what>".
local xpcall, getinfo = xpcall, debug.getinfo
local function traceback(err)
  local parts, level = {}, 2
  while true do
    local ar = getinfo(level, "Slntf")
    if not ar or ar.func == xpcall then break end
    level = level + 1
    -- The primitives' `S.call` is not shown, and a function of this
    -- prelude is shown as the C function it is in HAProxy.
    local prim = ar.what == "C" and ar.name == "call" and ar.namewhat == "field"
    if not prim and not (ar.currentline < 0 and ar.what == "C" and ar.namewhat == "" and not ar.name) then
      local s
      if ar.short_src == "prelude" then s = "[C]: "
      elseif ar.currentline > 0 then s = ar.short_src .. ":" .. ar.currentline .. ": "
      else s = ar.short_src .. ": " end
      if ar.namewhat ~= "" and ar.name then s = s .. "in " .. ar.namewhat .. " '" .. ar.name .. "'"
      elseif ar.what == "main" then s = s .. "in main chunk"
      elseif ar.what ~= "C" then s = s .. "in function line " .. ar.linedefined
      else s = s .. "?" end
      if ar.istailcall then s = s .. " ..." end
      parts[#parts + 1] = s
    end
  end
  return { err, table.concat(parts, ", ") }
end

-- Runs a registered function: true and its results, or false and
-- { error, traceback }.
local function run(f, ...) return xpcall(f, traceback, ...) end

-- A new TXN object: `http` for the HTTP actions, nil elsewhere; the
-- channels for a TCP response rule's (`chans`).
local function new_txn(http, chans)
  local t = setmetatable({ f = F, sf = SF, c = C, sc = SC }, TXN)
  if http then t.http = HTTP_OBJ end
  if chans then t.req, t.res = REQ_CHAN, RES_CHAN end
  return t
end

return new_txn, run, new_applet, new_applet_tcp, set_proxies, new_cli
