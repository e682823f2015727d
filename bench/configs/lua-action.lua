-- One Lua action per request for bench/lua.sh: a header from a fetch,
-- as the common scripts' request actions do.
core.register_action("tag", { "http-req" }, function(txn)
  txn.http:req_set_header("x-lua", txn.sf:req_hdr("host"))
end)
