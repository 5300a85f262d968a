// The GenAI client metrics' hook in the ledger charge (AgentReconciler::
// charge_ledger): each charged run, labelled by its Agent's spec.model, the
// model status.charge records (run_record.h). Handed only the charges the
// ledger record had not counted (ledger_record.h first_charges), so a charge
// repeated after its mark failed, in this process or after a crash, is not
// observed again. The Agent is read from the cache once per ledger charge.
#pragma once

#include <string>
#include <vector>

#include "controllers/runtime/genai_metrics.h"
#include "controllers/shell/cluster_view.h"
#include "controllers/spend/ledger_record.h"

namespace hb::controllers {

// `agent`'s spec.model from `view` (empty when the Agent is gone: the
// metrics' kGenAiOther).
void observe_gen_ai_charges(GenAiChargeMetrics& metrics, const ClusterView& view,
                            const std::string& ns, const std::string& agent,
                            const std::vector<LedgerCharge>& charges);

}  // namespace hb::controllers
