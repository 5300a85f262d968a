-- Argo CD health of an Agent (resource.customizations.health.heartbeat.dev_Agent).
-- Healthy: Ready. Suspended: heartbeats held by a choice (spec.paused, the
-- agent's pause_heartbeats, the monthly budget). Degraded: a problem that
-- needs a person (invalid spec, object in the way, missing Secret key).
-- Progressing: the operator has not reported on this generation yet.
local hs = {}
local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then return nil end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then return c end
  end
  return nil
end
local function says(c)
  local reason, message = c.reason or "", c.message or ""
  if reason ~= "" and message ~= "" then return reason .. ": " .. message end
  if message ~= "" then return message end
  return reason
end
local suspended_reasons = { Paused = true, PausedByAgent = true, BudgetExceeded = true }

local generation = obj.metadata and obj.metadata.generation
local observed = obj.status and obj.status.observedGeneration
if obj.status == nil or (generation ~= nil and (observed == nil or observed < generation)) then
  hs.status = "Progressing"
  hs.message = "the operator has not reported on this generation yet"
  return hs
end
local spec_valid = condition("SpecValid")
if spec_valid ~= nil and spec_valid.status == "False" then
  hs.status = "Degraded"
  hs.message = says(spec_valid)
  return hs
end
local ready = condition("Ready")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "no Ready condition yet"
elseif ready.status == "True" then
  hs.status = "Healthy"
  hs.message = says(ready)
elseif suspended_reasons[ready.reason] then
  hs.status = "Suspended"
  hs.message = says(ready)
else
  hs.status = "Degraded"
  hs.message = says(ready)
end
return hs
