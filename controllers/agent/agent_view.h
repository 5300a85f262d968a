// An Agent as the decision reads it: the spec parsed and checked, the stored
// status typed, the invoke annotation. Built once per stored version of the
// object (the shell's view cache), so a decision reads no JSON. Pure.
#pragma once

#include <optional>
#include <string>

#include "controllers/model/agent_spec.h"
#include "controllers/model/agent_status.h"
#include "controllers/model/json_util.h"

namespace hb::controllers {

struct AgentView {
  SpecCheck spec;  // the checks that need only the object
  AgentStatus status;
  bool status_canonical = false;      // see ParsedAgentStatus::canonical
  std::optional<std::string> invoke;  // the heartbeat.dev/invoke annotation
  std::optional<std::string> resume;  // the heartbeat.dev/resume annotation
  std::string resource_version;
};

AgentView view_agent(const Json& agent);

}  // namespace hb::controllers
