#include "controllers/runtime/metrics.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace hb::controllers {

std::string Metrics::label_text(const Labels& labels) {
  std::string out;
  for (const auto& [k, v] : labels) {
    if (!out.empty()) out += ",";
    out += k + "=\"";
    for (char c : v) {
      if (c == '"' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    out += "\"";
  }
  return out;
}

void Metrics::describe(const std::string& name, const std::string& type, const std::string& help,
                       std::vector<double> buckets) {
  std::lock_guard lock(mutex_);
  Family& f = families_[name];
  f.type = type;
  f.help = help;
  f.buckets = std::move(buckets);
}

void Metrics::counter_add(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mutex_);
  families_[name].values[label_text(labels)] += value;
}

void Metrics::gauge_set(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mutex_);
  Family& f = families_[name];
  if (f.help.empty()) f.type = "gauge";
  f.values[label_text(labels)] = value;
}

void Metrics::retain(const std::string& name, const std::set<std::string>& keep) {
  std::lock_guard lock(mutex_);
  auto family = families_.find(name);
  if (family == families_.end()) return;
  std::erase_if(family->second.values, [&keep](const auto& v) { return !keep.contains(v.first); });
}

void Metrics::observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mutex_);
  Family& f = families_[name];
  f.type = "histogram";
  const std::string key = label_text(labels);
  auto& counts = f.counts[key];
  if (counts.empty()) counts.assign(f.buckets.size() + 1, 0);
  for (size_t i = 0; i < f.buckets.size(); ++i) {
    if (value <= f.buckets[i]) ++counts[i];
  }
  ++counts.back();
  f.sums[key] += value;
}

void Metrics::observe_bucketed(const std::string& name, const Labels& labels,
                               const std::vector<uint64_t>& per_bucket, double sum) {
  std::lock_guard lock(mutex_);
  Family& f = families_[name];
  if (per_bucket.size() != f.buckets.size() + 1) return;
  f.type = "histogram";
  const std::string key = label_text(labels);
  auto& counts = f.counts[key];
  if (counts.empty()) counts.assign(f.buckets.size() + 1, 0);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < per_bucket.size(); ++i) {
    cumulative += per_bucket[i];
    counts[i] += cumulative;
  }
  f.sums[key] += sum;
}

void Metrics::on_render(std::function<void(Metrics&)> collector) {
  std::lock_guard lock(mutex_);
  collectors_.push_back(std::move(collector));
}

double Metrics::value(const std::string& name, const Labels& labels) const {
  std::lock_guard lock(mutex_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto v = f->second.values.find(label_text(labels));
  return v == f->second.values.end() ? 0 : v->second;
}

namespace {
// The shortest text that reads back as the same double (0.005, not
// 0.0050000000000000001), as Prometheus clients print bucket bounds.
std::string number(double v) {
  char buffer[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, v);
    if (std::strtod(buffer, nullptr) == v) break;
  }
  return buffer;
}
std::string with_labels(const std::string& name, const std::string& labels,
                        const std::string& extra = "") {
  std::string all = labels;
  if (!extra.empty()) all = all.empty() ? extra : all + "," + extra;
  return all.empty() ? name : name + "{" + all + "}";
}
}  // namespace

std::string Metrics::render() {
  std::vector<std::function<void(Metrics&)>> collectors;
  {
    std::lock_guard lock(mutex_);
    collectors = collectors_;
  }
  for (auto& c : collectors) c(*this);
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  for (const auto& [name, f] : families_) {
    if (!f.help.empty()) out << "# HELP " << name << " " << f.help << "\n";
    out << "# TYPE " << name << " " << f.type << "\n";
    if (f.type == "histogram") {
      for (const auto& [labels, counts] : f.counts) {
        for (size_t i = 0; i < f.buckets.size(); ++i) {
          out << with_labels(name + "_bucket", labels, "le=\"" + number(f.buckets[i]) + "\"") << " "
              << counts[i] << "\n";
        }
        out << with_labels(name + "_bucket", labels, "le=\"+Inf\"") << " " << counts.back() << "\n";
        out << with_labels(name + "_sum", labels) << " " << number(f.sums.at(labels)) << "\n";
        out << with_labels(name + "_count", labels) << " " << counts.back() << "\n";
      }
    } else {
      for (const auto& [labels, value] : f.values) {
        out << with_labels(name, labels) << " " << number(value) << "\n";
      }
    }
  }
  return out.str();
}

void describe_operator_metrics(Metrics& m) {
  const std::vector<double> seconds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                       1,     2.5,  5,     10,   30,  60};
  m.describe("controller_runtime_reconcile_total", "counter",
             "Total number of reconciliations per controller and result.");
  m.describe("controller_runtime_reconcile_errors_total", "counter",
             "Total number of reconciliation errors per controller.");
  m.describe("controller_runtime_reconcile_time_seconds", "histogram",
             "Length of time per reconciliation per controller.", seconds);
  m.describe("controller_runtime_active_workers", "gauge",
             "Number of currently used workers per controller.");
  m.describe("controller_runtime_max_concurrent_reconciles", "gauge",
             "Maximum number of concurrent reconciles per controller.");
  m.describe("workqueue_depth", "gauge", "Current depth of workqueue.");
  m.describe("workqueue_adds_total", "counter", "Total number of adds handled by workqueue.");
  m.describe("workqueue_retries_total", "counter", "Total number of retries handled by workqueue.");
  m.describe("workqueue_unfinished_work_items", "gauge",
             "Number of items being processed (and delayed items waiting) per workqueue.");
  m.describe("rest_client_requests_total", "counter",
             "Number of HTTP requests to the API server, by verb.");
  m.describe("leader_election_master_status", "gauge",
             "1 while this replica is the leader, else 0.");
  m.describe("heartbeat_runs_total", "counter", "HeartbeatRuns finished, by final phase.");
  m.describe("heartbeat_objects_refused_total", "counter",
             "Objects an informer skipped, by resource and reason (too_deep, too_large, "
             "malformed); each is logged by namespace/name and given an Event ObjectRefused.");
  m.describe("heartbeat_concurrent_runs", "gauge",
             "Runs started and not final (or admitted), counted against --max-concurrent-runs and "
             "the HeartbeatPolicies' maxConcurrentRuns.");
  m.describe("heartbeat_runs_waiting_for_place", "gauge",
             "Agents whose next run waits for a place under --max-concurrent-runs or a "
             "HeartbeatPolicy's maxConcurrentRuns.");
  m.describe("heartbeat_runs_coalesced_total", "counter",
             "Callback runs folded into an earlier queued callback run (wakeup coalescing).");
  m.describe("heartbeat_runs_started_total", "counter",
             "HeartbeatRuns started (Job created), by source.");
  m.describe("heartbeat_cost_cents_total", "counter",
             "Cost of finished runs added to agent spend, in US cents.");
  m.describe("heartbeat_cost_mismatch_total", "counter",
             "Finished runs whose runner-reported cost differs from tokens x pricing "
             "(the operator's figure is charged).");
  m.describe("heartbeat_usage_out_of_bounds_total", "counter",
             "Finished runs whose reported usage was malformed or above what the run could "
             "use (charged the bound).");
  m.describe("heartbeat_schedule_lag_seconds", "histogram",
             "Job creation time minus the scheduled slot, for scheduler runs.", seconds);
  m.describe("heartbeat_api_writes_total", "counter", "Writes the reconcilers sent, by kind.");
  m.describe("heartbeat_otlp_spans_exported_total", "counter",
             "The operator's spans an OTLP collector accepted (--otel-endpoint).");
  m.describe("heartbeat_otlp_spans_dropped_total", "counter",
             "The operator's spans dropped, by reason: queue_full, export_failed, too_large.");
  m.describe("heartbeat_runs_stalled_total", "counter",
             "HeartbeatRuns failed as Stalled (no beat renewed the agent's Lease in time).");
  m.describe("heartbeat_admissions_stale_total", "counter",
             "Starts held back because the concurrency gate refused the place their decision "
             "was admitted to from its snapshot (another start took it first).");
  m.describe("heartbeat_budget_blocked_agents", "gauge",
             "Agents whose monthly budget stops their heartbeats, by the BudgetExceeded "
             "condition's reason (AwaitingApproval: waiting for a person).");
  // Per agent (labels namespace and agent only), up to --agent-metrics-max agents.
  m.describe("heartbeat_agent_spend_cents", "gauge",
             "The agent's spend this UTC month, in US cents.");
  m.describe("heartbeat_agent_budget_cents", "gauge",
             "The agent's spec.budget.monthlyCents (absent when unlimited).");
  m.describe("heartbeat_agent_runs_total", "counter",
             "The agent's finished HeartbeatRuns counted by this operator process, by phase.");
  m.describe("heartbeat_agent_last_run_timestamp_seconds", "gauge",
             "When the agent's last heartbeat finished (status.lastHeartbeatTime), unix seconds.");
  m.describe("heartbeat_agent_next_heartbeat_timestamp_seconds", "gauge",
             "When the operator means to start the agent's next heartbeat "
             "(status.nextHeartbeatTime), unix seconds; absent while paused, awaiting budget "
             "approval or invalid.");
  m.describe("heartbeat_agent_budget_exceeded", "gauge",
             "1 while a budget stops the agent's heartbeats (its BudgetExceeded condition), "
             "else 0.");
  m.describe("heartbeat_agent_provider_throttled", "gauge",
             "1 while a spent provider quota holds the agent (its ProviderThrottled "
             "condition), else 0.");
}

}  // namespace hb::controllers
