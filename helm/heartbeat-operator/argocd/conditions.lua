-- What every kind's health check reads its status with. Argo CD runs each
-- kind's script alone, so scripts/argocd-health-config.sh puts this in front
-- of each heartbeat.dev/KIND/health.lua (and tests/unit/argocd does the same).
local hs = {}
-- The condition of this type in status.conditions, or nil.
local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then return nil end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then return c end
  end
  return nil
end
-- Whether the condition is True, and the condition.
local function is_true(kind)
  local c = condition(kind)
  return c ~= nil and c.status == "True", c
end
-- "reason: message", or whichever of the two is there (a condition or a status).
local function says(c)
  local reason, message = c.reason or "", c.message or ""
  if reason ~= "" and message ~= "" then return reason .. ": " .. message end
  if message ~= "" then return message end
  return reason
end
-- The operator has not reported on this generation of the object yet.
local function unobserved()
  local generation = obj.metadata and obj.metadata.generation
  local observed = obj.status and obj.status.observedGeneration
  return obj.status == nil or (generation ~= nil and (observed == nil or observed < generation))
end
