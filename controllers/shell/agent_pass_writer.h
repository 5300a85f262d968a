// One reconcile pass's writer: performs the steps of a write plan
// (controllers/plan/write_plan.h) through the reconciler's API writes
// (agent_api_writes.h), which count each write and remember it for the
// next reads. A failed step keeps its error here and stops the pass.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controllers/plan/write_plan.h"
#include "controllers/shell/agent_reconciler.h"
#include "kube/errors.h"

namespace hb::controllers {

class AgentReconciler::PassWriter final : public PlanWriter {
 public:
  // `agent` and `runs` are the pass's copies: a created run is added to
  // `runs`, the agent's resourceVersion follows the annotation removal.
  PassWriter(AgentReconciler& reconciler, Json& agent, const AgentSpec& spec,
             std::vector<Json>& runs, TimePoint now);

  void before(const PlannedWrite& write) override;
  WriteResult delete_job(const std::string& run) override;
  WriteResult create_run(const RunRequest& request) override;
  WriteResult invoke_run(const RunRequest& request) override;
  WriteResult mention_run(const MentionRequest& request) override;
  WriteResult replace_agent_status(const Json& status) override;
  WriteResult write_run_status(const PlannedWrite& write) override;
  WriteResult start_run(const std::string& run) override;
  WriteResult start_slot_run(const RunRequest& request) override;
  WriteResult delete_run(const std::string& run) override;
  void record_event(const Event& event) override;

  // Why the pass stopped, when it did.
  std::optional<kube::Error> error;
  // The heartbeat prompt when the pass read it before deciding.
  std::optional<Prompt> prompt;
  // The final statuses the plan writes (final_statuses), by run name, until
  // each is written: a run started ahead of them tells its context document
  // those runs as they end.
  std::map<std::string, Json> finals_ahead;
  // Names held by runs of an earlier Agent of this name (PassRead).
  std::set<std::string> other_agents_runs;
  // The place the decision was admitted to from its gate snapshot: the
  // gate commits it before the Job is made, or the start is held back.
  std::optional<StartCandidate> admission;
  // Run names the gate reserved a place for in this pass (settle_admissions).
  std::set<std::string> admitted;

 private:
  WriteResult check(kube::Done done);
  // Commits `admission` with the gate (no gate: nothing to commit); false:
  // the gate refused it.
  bool commit_admission(const std::string& run);
  void count_finished(const PlannedWrite& write);

  AgentReconciler& r_;
  Json& agent_;
  const AgentSpec& spec_;
  std::vector<Json>& runs_;
  TimePoint now_;
  std::string ns_;
  std::string name_;
};

}  // namespace hb::controllers
