// The GenAI client metrics' hook in the ledger charge (AgentReconciler::
// charge_ledger): each charged run, labelled by its Agent's spec.model, the
// model status.charge records (run_record.h). The Agent is read from the
// cache once per ledger charge (a finished run; again only when its mark
// failed and the charge is repeated, which the metrics count once).
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
