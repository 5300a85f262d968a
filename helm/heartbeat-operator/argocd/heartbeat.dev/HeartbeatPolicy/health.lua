-- Argo CD health of a HeartbeatPolicy (resource.customizations.health.heartbeat.dev_HeartbeatPolicy).
-- Degraded: Stalled, an invalid spec (the policy limits nobody until a
-- person fixes it). Progressing: the operator has not acted on this
-- generation yet, or says it is Reconciling. Suspended: the kill switch
-- (spec.paused) or a spent team budget holds the agents it selects, a state
-- a person chose. Healthy: Ready, also when it selects no Agent (the message
-- says so).
local hs = {}
local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then return nil end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then return c end
  end
  return nil
end
local function is_true(kind)
  local c = condition(kind)
  return c ~= nil and c.status == "True", c
end
local function says(c)
  local reason, message = c.reason or "", c.message or ""
  if reason ~= "" and message ~= "" then return reason .. ": " .. message end
  if message ~= "" then return message end
  return reason
end

local generation = obj.metadata and obj.metadata.generation
local observed = obj.status and obj.status.observedGeneration
if obj.status == nil or (generation ~= nil and (observed == nil or observed < generation)) then
  hs.status = "Progressing"
  hs.message = "the operator has not reported on this generation yet"
  return hs
end
local stalled, stalled_c = is_true("Stalled")
if stalled then
  hs.status = "Degraded"
  hs.message = says(stalled_c)
  return hs
end
local reconciling, reconciling_c = is_true("Reconciling")
if reconciling then
  hs.status = "Progressing"
  hs.message = says(reconciling_c)
  return hs
end
local ready = condition("Ready")
local paused, paused_c = is_true("Paused")
local over_budget, budget_c = is_true("BudgetExceeded")
local matches_nothing, nothing_c = is_true("SelectorMatchesNothing")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "no Ready condition yet"
elseif ready.status ~= "True" then
  hs.status = "Degraded"  -- an operator without Stalled says an invalid spec here
  hs.message = says(ready)
elseif paused or over_budget then
  hs.status = "Suspended"
  hs.message = says(paused and paused_c or budget_c)
elseif matches_nothing then
  hs.status = "Healthy"
  hs.message = says(nothing_c)
else
  hs.status = "Healthy"
  hs.message = says(ready)
end
return hs
