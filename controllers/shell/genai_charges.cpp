#include "controllers/shell/genai_charges.h"

#include <optional>

#include "controllers/model/json_util.h"

namespace hb::controllers {

void observe_gen_ai_charges(GenAiChargeMetrics& metrics, const ClusterView& view,
                            const std::string& ns, const std::string& agent,
                            const std::vector<LedgerCharge>& charges) {
  if (charges.empty()) return;
  std::string provider;
  std::string model;
  if (const std::optional<Json> object = view.agent(ns, agent)) {
    provider = string_at(*object, "spec/model/provider");
    model = string_at(*object, "spec/model/model");
  }
  for (const LedgerCharge& charge : charges) {
    metrics.record({ns + "/" + charge.run, provider, model, charge.input_tokens,
                    charge.output_tokens, charge.call_durations});
  }
}

}  // namespace hb::controllers
