#include "controllers/agent/agent_view.h"

#include "controllers/model/names.h"
#include "controllers/spend/budget_hold.h"

namespace hb::controllers {

AgentView view_agent(const Json& agent) {
  AgentView v;
  v.spec = parse_agent_spec(agent);
  ParsedAgentStatus parsed = parse_agent_status(find_path(agent, "status"));
  v.status = std::move(parsed.status);
  v.status_canonical = parsed.canonical;
  if (const Json* annotations = find_path(agent, "metadata/annotations");
      annotations != nullptr && annotations->is_object()) {
    auto it = annotations->find(kAnnotationInvoke);
    if (it != annotations->end() && it->is_string()) v.invoke = it->get<std::string>();
    it = annotations->find(kAnnotationResume);
    if (it != annotations->end() && it->is_string()) v.resume = it->get<std::string>();
  }
  v.resource_version = string_at(agent, "metadata/resourceVersion");
  return v;
}

}  // namespace hb::controllers
