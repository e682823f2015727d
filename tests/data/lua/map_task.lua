-- A background task that keeps a map up to date, as the scripts that
-- refresh blocklists or routing tables from a source do: it waits, then
-- sets an entry and deletes another, which the requests' `map`
-- converters see. @MAP@ is the map file (the test writes it in).
local map = "@MAP@"

core.register_task(function()
  core.msleep(10)
  core.set_map(map, "state", "ready")
  core.set_map(map, "added", "new")
  core.del_map(map, "gone")
end)
