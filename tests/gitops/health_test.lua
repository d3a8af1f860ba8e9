-- Runs deploy/gitops/argocd/perfvalidation-health.lua under lua5.1 (the Lua Argo CD embeds)
-- against recorded PerfValidation objects and checks the health it gives each.
--   lua5.1 health_test.lua SCRIPT TESTDATA_DIR EXPECTED_FILE
-- Each script run gets a fresh environment holding only `obj` and Lua's base functions, as
-- Argo CD gives it (no io/os): a script that reached for them would fail here too.
local cjson = require("cjson")

local script_path, testdata, expected_path = arg[1], arg[2], arg[3]
assert(script_path and testdata and expected_path,
       "usage: lua5.1 health_test.lua SCRIPT TESTDATA_DIR EXPECTED_FILE")
local chunk = assert(loadfile(script_path))

-- cjson turns JSON null into a sentinel; Argo CD's objects have nil there.
local function strip_nulls(v)
  if type(v) ~= "table" then
    if v == cjson.null then return nil end
    return v
  end
  local out = {}
  for k, e in pairs(v) do out[k] = strip_nulls(e) end
  return out
end

local function read(path)
  local f = assert(io.open(path, "r"))
  local text = f:read("*a")
  f:close()
  return text
end

local function health(object)
  local env = {obj = object, ipairs = ipairs, pairs = pairs, type = type, tostring = tostring,
               tonumber = tonumber, string = string, table = table, math = math}
  setfenv(chunk, env)
  local ok, result = pcall(chunk)
  if not ok then return nil, result end
  return result
end

local failures, count = 0, 0
for line in io.lines(expected_path) do
  local name, want_status, want_message = line:match("^(%S+)%s+(%S+)%s+(.-)%s*$")
  if name and name:sub(1, 1) ~= "#" then
    count = count + 1
    local object = strip_nulls(cjson.decode(read(testdata .. "/" .. name .. ".json")))
    local hs, err = health(object)
    if hs == nil then
      failures = failures + 1
      print(string.format("FAIL %s: script error: %s", name, tostring(err)))
    elseif hs.status ~= want_status or not (hs.message or ""):find(want_message, 1, true) then
      failures = failures + 1
      print(string.format("FAIL %s: got %s %q, want %s with %q", name, tostring(hs.status),
                          tostring(hs.message), want_status, want_message))
    else
      print(string.format("ok   %s: %s (%s)", name, hs.status, hs.message))
    end
  end
end
print(string.format("%d passed, %d failed", count - failures, failures))
if failures > 0 or count == 0 then os.exit(1) end
