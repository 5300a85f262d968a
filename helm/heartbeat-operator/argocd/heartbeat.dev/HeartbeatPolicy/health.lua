-- Argo CD health of a HeartbeatPolicy (resource.customizations.health.heartbeat.dev_HeartbeatPolicy).
-- Degraded: Stalled, an invalid spec (the policy limits nobody until a
-- person fixes it). Progressing: the operator has not acted on this
-- generation yet, or says it is Reconciling. Suspended: the kill switch
-- (spec.paused) or a spent team budget holds the agents it selects, a state
-- a person chose. Healthy: Ready, also when it selects no Agent (the message
-- says so).
-- (condition, is_true, says, unobserved and hs: ../../conditions.lua)

if unobserved() then
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
