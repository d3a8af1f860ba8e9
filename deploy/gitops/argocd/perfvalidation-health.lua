-- Argo CD resource health for perfgate.io/PerfValidation (Lua 5.1, as Argo CD runs it).
-- Reads the conditions docs/gitops.md defines:
--   Progressing  no status yet, status.observedGeneration (or a condition's) behind
--                metadata.generation, or the run has not completed
--   Suspended    spec.suspend is true and the run has not completed
--   Healthy      Complete=True and Passed=True
--   Degraded     Complete=True and Passed is not True, or Stalled=True
-- Install: deploy/gitops/argocd/argocd-cm.yaml carries this script.
local hs = {}

local function condition(conditions, type)
  if conditions == nil then return nil end
  for _, c in ipairs(conditions) do
    if c.type == type then return c end
  end
  return nil
end

local function describe(c, fallback)
  if c == nil then return fallback end
  local text = c.reason or fallback
  if c.message ~= nil and c.message ~= "" then text = text .. ": " .. c.message end
  return text
end

local generation = 0
if obj.metadata ~= nil and obj.metadata.generation ~= nil then
  generation = obj.metadata.generation
end
local status = obj.status
if status == nil or status.observedGeneration == nil or status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the perfgate operator to observe generation " .. generation
  return hs
end

local conditions = status.conditions
local complete = condition(conditions, "Complete")
local passed = condition(conditions, "Passed")
local stalled = condition(conditions, "Stalled")
-- A condition written for an older generation says nothing about this one.
for _, type in ipairs({"Complete", "Passed", "Stalled"}) do
  local c = condition(conditions, type)
  if c ~= nil and c.observedGeneration ~= nil and c.observedGeneration < generation then
    hs.status = "Progressing"
    hs.message = "Conditions are from generation " .. c.observedGeneration ..
        ", waiting for generation " .. generation
    return hs
  end
end

if complete ~= nil and complete.status == "True" then
  if passed ~= nil and passed.status == "True" then
    hs.status = "Healthy"
    hs.message = describe(passed, "Passed")
  else
    hs.status = "Degraded"
    hs.message = describe(passed or stalled, "Not passed")
  end
  return hs
end
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(stalled, "Stalled")
  return hs
end
if obj.spec ~= nil and obj.spec.suspend == true then
  hs.status = "Suspended"
  hs.message = "spec.suspend is true"
  return hs
end
hs.status = "Progressing"
hs.message = describe(condition(conditions, "Reconciling") or condition(conditions, "Ready"), "Running")
return hs
