-- Argo CD health of an Agent (resource.customizations.health.heartbeat.dev_Agent).
-- Degraded: Stalled, a problem that needs a person (invalid spec, object in
-- the way, missing Secret key or prompt ConfigMap). Progressing: the operator
-- has not acted on this generation yet, or says it is Reconciling.
-- Suspended: heartbeats held by a choice (spec.paused, the agent's
-- pause_heartbeats, the monthly budget); such an Agent stays Ready. Healthy:
-- Ready. Statuses from operators before the kstatus conditions (a pause made
-- Ready False) read the same.
-- (condition, is_true, says, unobserved and hs: ../../conditions.lua)
local suspended_reasons = { Paused = true, PausedByAgent = true, BudgetExceeded = true }

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
local spec_valid = condition("SpecValid")
if spec_valid ~= nil and spec_valid.status == "False" then
  hs.status = "Degraded"
  hs.message = says(spec_valid)
  return hs
end
local reconciling, reconciling_c = is_true("Reconciling")
if reconciling then
  hs.status = "Progressing"
  hs.message = says(reconciling_c)
  return hs
end
local over_budget, budget_c = is_true("BudgetExceeded")
local paused, paused_c = is_true("Paused")
local ready = condition("Ready")
if over_budget or paused then
  hs.status = "Suspended"
  if ready ~= nil and suspended_reasons[ready.reason] then
    hs.message = says(ready)  -- the block that holds the next heartbeat
  else
    hs.message = says(over_budget and budget_c or paused_c)
  end
elseif ready == nil then
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
