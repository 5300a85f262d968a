// What the reconciler reads: cached objects, never the API server. The
// informer-backed implementation is ClusterCache; tests may fake it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"
#include "controllers/model/run_cost.h"

namespace hb::controllers {

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual std::optional<Json> agent(const std::string& ns, const std::string& name) const = 0;
  // fn(agent) for each cached Agent, one parsed at a time.
  virtual void for_each_agent(const std::function<void(const Json&)>& fn) const = 0;
  // Runs whose spec.agentRef.name is `agent`.
  virtual std::vector<Json> runs_of(const std::string& ns, const std::string& agent) const = 0;
  virtual std::optional<Json> job(const std::string& ns, const std::string& name) const = 0;
  // Jobs of the Agent named `agent` made before their run and not yet
  // handed to it (run_after_job.h).
  virtual std::vector<Json> jobs_awaiting_run(const std::string& ns,
                                              const std::string& agent) const = 0;
  // Pods of the run's Job (by the run-name annotation).
  virtual std::vector<Json> pods_of(const std::string& ns, const std::string& run) const = 0;
  virtual std::optional<Json> lease(const std::string& ns, const std::string& name) const = 0;
  // The highest usage run `run` reported on any version of its agent's
  // Lease this process saw; nullopt: none.
  virtual std::optional<UsageCounts> reported_usage(const std::string& ns,
                                                    const std::string& run) const = 0;
  virtual bool synced() const = 0;
};

}  // namespace hb::controllers
