-- Prints a status merge patch from a recorded PerfValidation, moved to generation GEN (the
-- object's own observedGeneration lag kept), as the operator would write it.
--   lua5.1 status_patch.lua FIXTURE.json GEN
local cjson = require("cjson")
local f = assert(io.open(arg[1]))
local o = cjson.decode(f:read("*a"))
f:close()
local gen = tonumber(arg[2])
local s = o.status
if s.observedGeneration ~= nil then
  s.observedGeneration = s.observedGeneration + gen - o.metadata.generation
end
for _, c in ipairs(s.conditions or {}) do c.observedGeneration = s.observedGeneration end
-- cjson cannot tell an empty array from an empty object ({}): leave empty ones out, which a
-- merge patch onto a fresh status reads the same.
for k, v in pairs(s) do
  if type(v) == "table" and next(v) == nil then s[k] = nil end
end
print(cjson.encode({status = s}))
