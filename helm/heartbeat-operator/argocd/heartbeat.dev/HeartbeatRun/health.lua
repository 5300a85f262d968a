-- Argo CD health of a HeartbeatRun (resource.customizations.health.heartbeat.dev_HeartbeatRun).
-- Progressing: not started yet (no phase, Queued) or Running. Healthy:
-- Succeeded. Degraded: Failed or TimedOut. Suspended: Cancelled (a person,
-- a budget stop or a newer run ended it; finished, not broken).
-- (says and hs: ../../conditions.lua)
local phase = obj.status and obj.status.phase or ""
local detail = says(obj.status or {})
if phase == "" or phase == "Queued" then
  hs.status = "Progressing"
  hs.message = "waiting to start" .. (detail ~= "" and (" (" .. detail .. ")") or "")
elseif phase == "Running" then
  hs.status = "Progressing"
  hs.message = "running"
elseif phase == "Succeeded" then
  hs.status = "Healthy"
  hs.message = detail
elseif phase == "Failed" or phase == "TimedOut" then
  hs.status = "Degraded"
  hs.message = phase .. (detail ~= "" and (": " .. detail) or "")
elseif phase == "Cancelled" then
  hs.status = "Suspended"
  hs.message = "cancelled" .. (detail ~= "" and (": " .. detail) or "")
else
  hs.status = "Unknown"
  hs.message = "unknown phase " .. phase
end
return hs
