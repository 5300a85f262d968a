#include "tests/sim/world.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <sstream>

#include "controllers/model/names.h"
#include "controllers/model/run_view.h"
#include "controllers/run/run_after_job.h"
#include "controllers/runtime/metrics.h"
#include "controllers/runtime/workqueue.h"
#include "controllers/schedule/blocks.h"
#include "controllers/schedule/utc_time.h"
#include "controllers/shell/agent_reconciler.h"
#include "controllers/shell/cluster_cache.h"
#include "controllers/shell/concurrency_gate.h"
#include "controllers/shell/fleet_wiring.h"
#include "controllers/shell/policy_index.h"
#include "controllers/shell/policy_status_writer.h"
#include "controllers/spend/budget_hold.h"
#include "operator/leader_election.h"
#include "operator/reconcile_workers.h"
#include "tests/sim/checker.h"
#include "tests/sim/feed.h"
#include "tests/sim/transport.h"

namespace hb::sim {

namespace {

using namespace std::chrono_literals;
using schedule::format_rfc3339;

constexpr auto kStepMax = 5s;
constexpr auto kStallWindow = 60s;
// The runner's clock: up to 10 minutes behind or 2 minutes ahead of true
// time (a renewTime that far ahead is disbelieved), so only the operator's
// own sighting of each beat tells a beating run from a stalled one.
constexpr int kRunnerSkewSecondsMin = -600;
constexpr int kRunnerSkewSecondsMax = 120;
constexpr auto kDrain = 20min;
// How often the change logs drop what every watch has taken (memory only:
// no simulated actor sees it).
constexpr auto kForgetChangesEvery = 30s;
// Two replicas, as the chart's replicaCount: 2 runs them; one leads.
constexpr std::size_t kReplicas = 2;
// A frozen leader (a stopped VM, SIGSTOP) sleeps this long: under the renew
// deadline it stays leader, past the lease duration the standby takes over
// and the thawed one must not write.
constexpr int kFreezeSecondsMin = 3;
constexpr int kFreezeSecondsMax = 40;
constexpr int kReconcilesPerInstantMax = 10000;
// An answered request takes up to this (1% take 0.5-3 s, transport.h).
constexpr std::chrono::milliseconds kLatencyMax{20};
const char* const kNamespaces[] = {"team-a", "team-b"};
// The HeartbeatPolicy the world creates: in namespace team-a, over the
// Agents labelled team=a there (the ones of team-b that carry the same
// label are not its own). Every third Agent of team-a is in team b.
constexpr const char* kPolicyName = "team-a";
constexpr const char* kPolicyNamespace = "team-a";
constexpr const char* kTeamLabel = "team";
constexpr int kOtherTeamEvery = 3;
// Its team budget: none half the time, else a few cents (a run costs about
// a third of a cent), so the hour's runs reach it; the user changes it
// within [0, kTeamBudgetCentsMax] and the cap within [1, kPolicyCapMax].
constexpr double kTeamBudgetShare = 0.5;
constexpr int kTeamBudgetCentsMin = 2;
constexpr int kTeamBudgetCentsMax = 20;
// Daily budgets: a share of Agents and of team budgets have one, within
// [kDailyCentsMin, kDailyCentsMax]; a team's day is in one of kPolicyZones.
constexpr double kDailyBudgetShare = 0.3;
constexpr int kDailyCentsMin = 1;
constexpr int kDailyCentsMax = 12;
constexpr std::array<const char*, 3> kPolicyZones = {"", "Asia/Tokyo", "America/New_York"};
constexpr int64_t kPolicyCapMax = 3;
// Now and then every write of a run's status fails for a while (503: a
// webhook on the status subresource, an etcd member down), so runs start
// and end with their Running status still unwritten.
constexpr int kOutageSecondsMin = 10;
constexpr int kOutageSecondsMax = 90;
constexpr int kOutageEverySecondsMin = 600;
constexpr int kOutageEverySecondsMax = 3600;
// The share of the operator's run creates right after which its process
// crashes: the dispatch path's second write (the Job) is then made, or
// adopted, by the next leader. The scheduled crashes fall between steps,
// never inside a pass, so without these no crash would land between the two.
constexpr double kCrashAfterRunCreateShare = 0.03;
// The same right after a Job made before its run: the run is then made from
// the Job by the next leader.
constexpr double kCrashAfterJobFirstShare = 0.03;
// The share of the user's actions that change the policy or a team label.
constexpr double kPolicyActionShare = 0.2;
// Of the policy's own changes, the share that pause or resume it.
constexpr double kPolicyPauseShare = 0.3;

uint64_t mix(uint64_t x) {  // splitmix64: lags as pure functions of (seed, feed, rv)
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool held_by_cap(const Json& run) {
  return controllers::string_at(run, "status/reason") == controllers::kReasonConcurrencyLimited;
}
// Held by a HeartbeatPolicy's cap (the refusal names the policy), or by the operator-wide one.
bool held_by_policy(const Json& run) {
  return held_by_cap(run) &&
         controllers::string_at(run, "status/message").find(controllers::kPolicyKind) !=
             std::string::npos;
}
bool held_by_operator_cap(const Json& run) {
  return held_by_cap(run) && !held_by_policy(run);
}
// Held back by a team budget: BudgetExceeded with reason PolicyBudgetExceeded.
bool stopped_by_team_budget(const Json& agent) {
  const Json* conditions = controllers::find_path(agent, "status/conditions");
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const Json& c : *conditions) {
    if (controllers::string_at(c, "type") == controllers::kConditionBudgetExceeded &&
        controllers::string_at(c, "status") == "True" &&
        controllers::string_at(c, "reason") == schedule::kReasonPolicyBudgetExceeded) {
      return true;
    }
  }
  return false;
}
// A started run whose final status replaced no Running one (its Pod ended
// while the Running status could not be written).
bool ended_unrecorded(const Json& before, const Json& after) {
  const auto was = controllers::parse_run_phase(controllers::string_at(before, "status/phase"));
  const auto now = controllers::parse_run_phase(controllers::string_at(after, "status/phase"));
  return (!was || *was == controllers::RunPhase::kQueued) && now && controllers::is_final(*now) &&
         !controllers::string_at(after, "status/jobName").empty();
}
// Whether `held` holds after a write and did not before (a new hold to count).
template <typename Held>
bool newly(Held held, const std::optional<Json>& before, const std::optional<Json>& after) {
  return after && held(*after) && !(before && held(*before));
}

struct OperatorProcess {
  controllers::Metrics metrics;
  controllers::WorkQueue queue;
  std::vector<Feed*> feeds;
  std::shared_ptr<controllers::PolicyIndex> policies;
  std::unique_ptr<controllers::ClusterCache> cache;
  std::unique_ptr<controllers::AgentReconciler> reconciler;
  // The manager's policy status thread, one round every kPolicyStatusInterval.
  std::unique_ptr<controllers::PolicyStatusWriter> policy_status;
  TimePoint next_policy_status{};
  // Leader election through its own client; the reconciler's client only
  // writes while `elector->holding()` (the operator's write gate).
  std::unique_ptr<operator_::LeaderElector> elector;
  bool leading = false;
  TimePoint leading_since{}, next_election{};
  uint64_t generation = 0;  // which process this is, of all started
  // It crashed mid-pass: nothing it sends lands any more (the write gate
  // refuses it), and the world ends it when the pass returns.
  bool crashed = false;
  explicit OperatorProcess(controllers::WorkQueue::Clock steady) : queue(std::move(steady)) {}
};

// One replica: its process while it is up, when it comes back after a
// crash or a fence, and until when it is frozen.
struct Replica {
  std::unique_ptr<OperatorProcess> op;
  TimePoint restart_at{}, frozen_until{};
};

std::shared_ptr<kube::Client> client_over(std::shared_ptr<Transport> transport) {
  kube::ClusterConfig config;
  config.server = "http://sim.invalid";
  kube::ClientOptions options;
  options.qps = 0;  // the limiter sleeps in real time; the simulation has none
  return std::make_shared<kube::Client>(config, options, std::move(transport));
}

}  // namespace

class World {
 public:
  explicit World(const SimOptions& o);
  SimReport run();

 private:
  TimePoint operator_now() const { return now_ + operator_skew_; }
  std::chrono::steady_clock::time_point steady_now() const {
    return std::chrono::steady_clock::time_point(now_ - start_);
  }
  std::chrono::milliseconds lag(uint64_t feed, uint64_t rv) const;
  void start_operator(std::size_t i);
  void crash_operator(std::size_t i, const char* why);
  void drain_queue(OperatorProcess& op);
  // The operator created a run or a Job in the pass under way.
  void on_dispatch_write(const std::string& resource, const Json& created);
  void note_failed_pass(const OperatorProcess& op);
  void step_replica(std::size_t i);
  void elect(std::size_t i);
  void freeze_leader();
  OperatorProcess* leader();
  std::optional<std::size_t> random_live_replica();
  void step();
  void forget_delivered_changes();
  void user_action();
  void reapply_agent(const Json& agent);
  void rewrite_policies_stamp(const std::string& ns, const std::string& agent);
  void create_agents();
  void create_policy();
  // A budget for an Agent (monthly, now and then daily) and for the team.
  Json agent_budget();
  Json team_budget();
  bool policy_action();
  TimePoint next_time();
  bool draw(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  SimOptions options_;
  std::mt19937_64 rng_;
  TimePoint start_, now_;
  std::chrono::milliseconds operator_skew_{0};
  ApiServer server_;
  Checker checker_;
  std::shared_ptr<Transport> operator_transport_, runner_transport_;
  Node node_;
  std::array<Replica, kReplicas> replicas_;
  uint64_t generations_ = 0;  // processes started, for identities and feed ids
  void jump_operator_clock();
  void begin_run_status_outage();
  bool in_run_status_outage(const http::Request& request) const;
  TimePoint next_crash_, next_user_, next_relist_, next_jump_, next_freeze_, next_outage_;
  TimePoint next_forget_{};
  TimePoint outage_until_{};
  bool faults_ = true;
  SimReport report_;
  // The process whose queue is being drained, and passes so far.
  OperatorProcess* dispatching_ = nullptr;
  uint64_t passes_ = 0;
  // "ns/run" -> the process generation and pass that created it, until its
  // Job is made.
  std::map<std::string, std::pair<uint64_t, uint64_t>> run_made_in_;
  // Runs whose Job was made first: the generation that made the Job.
  std::map<std::string, uint64_t> job_made_in_;
};

// A mid-month start by default, so the simulated days stay in one spend
// period; or within an hour after the one asked for.
TimePoint start_time(const SimOptions& o, std::mt19937_64& rng) {
  if (o.start.empty()) {
    return *controllers::parse_rfc3339("2026-03-10T08:00:00Z") +
           std::chrono::seconds(std::uniform_int_distribution<int>(0, 86400)(rng));
  }
  return *controllers::parse_rfc3339(o.start) +
         std::chrono::seconds(std::uniform_int_distribution<int>(0, 3600)(rng));
}

World::World(const SimOptions& o)
    : options_(o),
      rng_(o.seed),
      start_(start_time(o, rng_)),
      now_(start_),
      server_([this] { return now_; }),
      checker_(server_,
               {kStallWindow, 120s, [this](const std::string& run) { return node_.last_beat(run); },
                o.max_concurrent_runs}),
      operator_transport_(std::make_shared<Transport>(server_, Actor::kOperator, rng_)),
      runner_transport_(std::make_shared<Transport>(server_, Actor::kRunner, rng_)),
      node_(server_, client_over(runner_transport_), rng_,
            std::chrono::seconds(o.faults ? std::uniform_int_distribution<int>(
                                                kRunnerSkewSecondsMin, kRunnerSkewSecondsMax)(rng_)
                                          : 0)),
      faults_(o.faults) {
  if (faults_) {
    operator_skew_ =
        std::chrono::milliseconds(std::uniform_int_distribution<int>(-2000, 2000)(rng_));
    operator_transport_->set_faults({0.02, 0.01, 0.01, 0.01, 0.01, kLatencyMax, 0.01});
    runner_transport_->set_faults({0.05, 0.02, 0.02, 0.02, 0.02, kLatencyMax, 0.01});
  }
  for (Transport* t : {operator_transport_.get(), runner_transport_.get()}) {
    t->set_elapse([this](std::chrono::milliseconds d) { now_ += d; });
  }
  operator_transport_->set_outage(
      [this](const http::Request& r) { return in_run_status_outage(r); });
  server_.set_observer([this](Actor a, const std::string& r, const std::optional<Json>& before,
                              const std::optional<Json>& after) {
    if (r == "heartbeatruns" && !before && after) ++report_.runs_created;
    if (r == "heartbeatruns") {
      report_.final_before_running += before && after && ended_unrecorded(*before, *after);
      report_.concurrency_holds += newly(held_by_operator_cap, before, after);
      report_.policy_holds += newly(held_by_policy, before, after);
    }
    if (r == "agents") report_.policy_budget_stops += newly(stopped_by_team_budget, before, after);
    checker_.on_write(a, r, before, after, operator_now());
    if (a == Actor::kOperator && !before && after && dispatching_ != nullptr) {
      on_dispatch_write(r, *after);
    }
  });
  report_.seed = o.seed;
}

std::chrono::milliseconds World::lag(uint64_t feed, uint64_t rv) const {
  const uint64_t h = mix(options_.seed ^ mix(feed * 1000003 + rv));
  if (!faults_) return std::chrono::milliseconds(h % 50);
  const uint64_t pct = h % 100;
  if (pct < 90) return std::chrono::milliseconds((h >> 8) % 200);
  if (pct < 99) return std::chrono::milliseconds(200 + (h >> 8) % 1800);
  return std::chrono::milliseconds(2000 + (h >> 8) % 6000);
}

void World::start_operator(std::size_t i) {
  replicas_[i].op = std::make_unique<OperatorProcess>([this] { return steady_now(); });
  OperatorProcess* op = replicas_[i].op.get();
  const uint64_t generation = ++generations_ * 100;
  op->generation = generations_;
  auto make_feed = [this, op, generation](const kube::Resource& r, const kube::InformerOptions& o) {
    auto feed = std::make_unique<Feed>(server_, generation + op->feeds.size() + 1, r.resource, o,
                                       [this](uint64_t f, uint64_t rv) { return lag(f, rv); });
    op->feeds.push_back(feed.get());
    return feed;
  };
  std::shared_ptr<kube::Client> client = client_over(operator_transport_);
  client->set_write_gate([op] { return !op->crashed && op->elector->holding(); });
  controllers::CacheOptions cache_options;
  cache_options.steady_now = [this] { return steady_now(); };
  controllers::ReconcilerConfig config;
  // As operator/manager.cpp: the durable ledger in the operator's namespace.
  // The index holds the gate weakly: a crashed process's pair is freed.
  const controllers::FleetParts fleet = controllers::wire_fleet(
      options_.max_concurrent_runs, [this] { return steady_now(); },
      [q = &op->queue](const std::string& key) { q->add(key); }, client, "heartbeat-system",
      cache_options, config);
  op->policies = fleet.policies;
  op->cache = std::make_unique<controllers::ClusterCache>(
      make_feed, cache_options, [op](const std::string& key) { op->queue.add(key); });
  controllers::describe_operator_metrics(op->metrics);
  operator_::LeaderElectionConfig election;
  election.lease_namespace = "heartbeat-system";
  election.lease_name = "heartbeat-operator";
  election.identity = "replica-" + std::to_string(i) + "-" + std::to_string(generations_);
  operator_::LeaderClocks clocks;
  clocks.steady = [this] { return steady_now(); };
  clocks.wall = [this] { return operator_now(); };
  op->elector = std::make_unique<operator_::LeaderElector>(client_over(operator_transport_),
                                                           election, clocks);
  config.job.stall_window = kStallWindow;
  op->reconciler = std::make_unique<controllers::AgentReconciler>(
      client, *op->cache, config, op->metrics, [this] { return operator_now(); },
      [this] { return steady_now(); });
  op->policy_status = std::make_unique<controllers::PolicyStatusWriter>(
      client, *op->policies, [gate = config.concurrency] { return gate->started_by_agent(); },
      op->metrics, [this] { return operator_now(); });
  op->cache->start();
  for (Feed* f : op->feeds) f->relist(now_);
  op->next_election = now_;
  op->next_policy_status = now_;
}

// The process is gone (a crash, or it fenced itself on losing the Lease);
// everything it knew with it. It comes back 0-30 s later, as a Deployment's
// Pod would.
void World::crash_operator(std::size_t i, const char* why) {
  replicas_[i].op.reset();
  ++report_.crashes;
  replicas_[i].restart_at =
      now_ + std::chrono::seconds(std::uniform_int_distribution<int>(0, 30)(rng_));
  if (options_.verbose) spdlog::info("sim replica {} down at {}: {}", i, format_rfc3339(now_), why);
}

OperatorProcess* World::leader() {
  for (Replica& r : replicas_) {
    if (r.op && r.op->leading) return r.op.get();
  }
  return nullptr;
}

std::optional<std::size_t> World::random_live_replica() {
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < kReplicas; ++i) {
    if (replicas_[i].op) live.push_back(i);
  }
  if (live.empty()) return std::nullopt;
  return live[std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng_)];
}

// One acquire-or-renew attempt every retry period. A leader refused (another
// holds the Lease) or past its renew deadline exits, as the real one does.
void World::elect(std::size_t i) {
  OperatorProcess& op = *replicas_[i].op;
  op.next_election = now_ + op.elector->config().retry_period;
  const kube::Result<bool> held = op.elector->try_acquire_or_renew();
  if (held.ok() && held.value() && !op.leading) {
    op.leading = true;
    op.leading_since = now_;
    ++report_.leader_changes;
    if (options_.verbose) spdlog::info("sim replica {} leads at {}", i, format_rfc3339(now_));
  } else if (op.leading && held.ok() && !held.value()) {
    crash_operator(i, "lease held by another");
  } else if (op.leading && !op.elector->holding()) {
    crash_operator(i, "renew deadline passed");
  }
}

// A replica's turn: its caches take what arrived; a replica that believes
// it leads works its queue (the write gate refuses its writes once its term
// is over, even before it notices); then it runs its election.
void World::step_replica(std::size_t i) {
  Replica& r = replicas_[i];
  if (!r.op && now_ >= r.restart_at) start_operator(i);
  if (!r.op || now_ < r.frozen_until) return;
  for (Feed* f : r.op->feeds) f->deliver(now_);
  if (r.op->leading) drain_queue(*r.op);
  if (r.op->crashed) {
    crash_operator(i, "crash right after a run or Job create");
    return;
  }
  if (r.op->leading && now_ >= r.op->next_policy_status) {
    r.op->policy_status->write_changed();
    r.op->next_policy_status = now_ + controllers::kPolicyStatusInterval;
  }
  if (now_ >= r.op->next_election) elect(i);
}

void World::freeze_leader() {
  for (Replica& r : replicas_) {
    if (!r.op || !r.op->leading) continue;
    r.frozen_until = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(
                                kFreezeSecondsMin, kFreezeSecondsMax)(rng_));
    ++report_.freezes;
    if (options_.verbose)
      spdlog::info("sim leader frozen until {}", format_rfc3339(r.frozen_until));
    return;
  }
}

// The operator's own worker step (operator/reconcile_workers.h), on one thread.
void World::drain_queue(OperatorProcess& op) {
  std::atomic<int> active{0};
  operator_::ReconcileWorkerDeps deps{op.queue,
                                      [this, &op](const std::string& ns, const std::string& name) {
                                        ++report_.reconciles;
                                        ++passes_;
                                        auto result = op.reconciler->reconcile(ns, name);
                                        if (!result.ok()) {
                                          ++report_.reconcile_errors;
                                          if (!op.crashed) note_failed_pass(op);
                                          if (options_.verbose)
                                            spdlog::info("sim reconcile {}/{} failed at {}: {}", ns,
                                                         name, format_rfc3339(now_),
                                                         result.error().describe());
                                        }
                                        return result;
                                      },
                                      op.metrics,
                                      "agent",
                                      active,
                                      [this] { return steady_now(); }};
  dispatching_ = &op;
  for (int i = 0; i < kReconcilesPerInstantMax; ++i) {
    if (!operator_::process_ready_key(deps) || op.crashed) {
      dispatching_ = nullptr;
      return;
    }
  }
  dispatching_ = nullptr;
  report_.violations.push_back("livelock: more than " + std::to_string(kReconcilesPerInstantMax) +
                               " reconciles at " + format_rfc3339(now_));
}

// The pass under way failed: the runs it made still wait for their Job.
void World::note_failed_pass(const OperatorProcess& op) {
  for (const auto& [run, made] : run_made_in_) {
    report_.runs_left_by_failed_pass += made.first == op.generation && made.second == passes_;
  }
}

void World::on_dispatch_write(const std::string& resource, const Json& created) {
  if (resource == "heartbeatruns") {
    const std::string key = controllers::object_key(created);
    if (auto job_first = job_made_in_.find(key); job_first != job_made_in_.end()) {
      report_.runs_by_next_process += job_first->second != dispatching_->generation;
      job_made_in_.erase(job_first);
      return;  // its Job is made already
    }
    run_made_in_[key] = {dispatching_->generation, passes_};
    if (faults_ && !dispatching_->crashed && draw(kCrashAfterRunCreateShare)) {
      dispatching_->crashed = true;
      ++report_.crashes_after_run_create;
    }
    return;
  }
  if (resource != "jobs") return;
  const Json* annotations = controllers::find_path(created, "metadata/annotations");
  if (annotations == nullptr || !annotations->is_object()) return;
  const std::string run = annotations->value(controllers::kAnnotationRunName, std::string());
  if (controllers::awaits_its_run(created)) {
    ++report_.jobs_before_run;
    job_made_in_[controllers::object_key(controllers::namespace_of(created), run)] =
        dispatching_->generation;
    if (faults_ && !dispatching_->crashed && draw(kCrashAfterJobFirstShare)) {
      dispatching_->crashed = true;
      ++report_.crashes_after_job_first;
    }
    return;
  }
  const auto made = run_made_in_.find(
      controllers::object_key(controllers::string_at(created, "metadata/namespace"), run));
  if (made == run_made_in_.end()) return;
  report_.jobs_by_next_process += made->second.first != dispatching_->generation;
  run_made_in_.erase(made);
}

void World::create_agents() {
  for (int i = 0; i < options_.agents; ++i) {
    Json heartbeat = {{"prompt", "Heartbeat."},
                      {"startingDeadlineSeconds", 120},
                      {"contextRuns", 2},
                      {"historyLimits", {{"succeeded", 3}, {"failed", 2}}}};
    const int kind = std::uniform_int_distribution<int>(0, 5)(rng_);
    if (kind == 0) heartbeat["interval"] = "1m";
    if (kind == 1) heartbeat["interval"] = "3m";
    if (kind == 2) heartbeat["schedule"] = "*/2 * * * *";
    if (kind == 3) heartbeat.update({{"interval", "2m"}, {"spread", "Auto"}});
    // Berlin: a --start before one of its transitions crosses a skipped or a repeated hour.
    if (kind == 4) heartbeat.update({{"schedule", "H/3 * * * *"}, {"timeZone", "Europe/Berlin"}});
    // Half its runs end idle (the node's results), so the gap grows and resets.
    if (kind == 5) {
      heartbeat.update(
          {{"interval", "1m"}, {"idleBackoff", {{"after", 2}, {"maxInterval", "8m"}}}});
    }
    const bool other_team = i % 2 == 0 && (i / 2) % kOtherTeamEvery == kOtherTeamEvery - 1;
    Json agent = {{"apiVersion", "heartbeat.dev/v1alpha1"},
                  {"kind", "Agent"},
                  {"metadata",
                   {{"name", "agent-" + std::to_string(i)},
                    {"labels", {{kTeamLabel, other_team ? "b" : "a"}}}}},
                  {"spec",
                   {{"type", "memgpt_agent"},
                    {"model",
                     {{"provider", "openai"},
                      {"model", "sim"},
                      {"maxTokens", 4096},
                      {"apiKeySecretRef", {{"name", "llm"}, {"key", "api-key"}}},
                      {"pricing",
                       {{"inputCentsPerMillionTokens", 15}, {"outputCentsPerMillionTokens", 60}}}}},
                    {"heartbeat", heartbeat},
                    {"budget", agent_budget()},
                    {"runtime", {{"timeoutSeconds", 120}, {"graceSeconds", 10}}}}}};
    server_.create(Actor::kUser, "agents", kNamespaces[i % 2], agent);
  }
}

Json World::agent_budget() {
  Json budget = {{"monthlyCents", std::uniform_int_distribution<int>(20, 400)(rng_)}};
  budget["dailyCents"] = draw(kDailyBudgetShare) ? std::uniform_int_distribution<int>(
                                                       kDailyCentsMin, kDailyCentsMax)(rng_)
                                                 : 0;
  return budget;
}

Json World::team_budget() {
  Json budget = {{"monthlyCents", std::uniform_int_distribution<int>(0, kTeamBudgetCentsMax)(rng_)},
                 {"dailyCents", 0}};
  if (draw(kDailyBudgetShare)) {
    budget["dailyCents"] = std::uniform_int_distribution<int>(kDailyCentsMin, kDailyCentsMax)(rng_);
  }
  return budget;
}

void World::create_policy() {
  if (options_.policy_max_concurrent_runs <= 0) return;
  Json spec = {{"selector", {{"matchLabels", {{kTeamLabel, "a"}}}}},
               {"maxConcurrentRuns", options_.policy_max_concurrent_runs}};
  if (draw(kTeamBudgetShare)) {
    spec["budget"] = {{"monthlyCents", std::uniform_int_distribution<int>(
                                           kTeamBudgetCentsMin, kTeamBudgetCentsMax)(rng_)}};
    if (draw(kDailyBudgetShare)) {
      spec["budget"]["dailyCents"] =
          std::uniform_int_distribution<int>(kDailyCentsMin, kDailyCentsMax)(rng_);
    }
  }
  const char* zone =
      kPolicyZones[std::uniform_int_distribution<std::size_t>(0, kPolicyZones.size() - 1)(rng_)];
  if (*zone != '\0') spec["timeZone"] = zone;
  server_.create(Actor::kUser, "heartbeatpolicies", kPolicyNamespace,
                 {{"apiVersion", "heartbeat.dev/v1alpha1"},
                  {"kind", controllers::kPolicyKind},
                  {"metadata", {{"name", kPolicyName}}},
                  {"spec", spec}});
}

// Now and then the user moves an Agent to the other team, pauses or
// resumes the policy (the kill switch, now and then cancelling runs in
// flight), or changes its cap or team budget. False when there is no policy.
bool World::policy_action() {
  if (server_.peek("heartbeatpolicies", kPolicyNamespace, kPolicyName) == nullptr) return false;
  if (draw(0.5)) {
    std::vector<Json> agents = server_.objects("agents", kPolicyNamespace);
    if (agents.empty()) return false;
    ++report_.user_actions;
    const Json& agent =
        agents[std::uniform_int_distribution<std::size_t>(0, agents.size() - 1)(rng_)];
    const bool in_a =
        controllers::string_at(agent, std::string("metadata/labels/") + kTeamLabel) == "a";
    server_.merge_patch(Actor::kUser, "agents", kPolicyNamespace,
                        controllers::string_at(agent, "metadata/name"),
                        {{"metadata", {{"labels", {{kTeamLabel, in_a ? "b" : "a"}}}}}}, false);
    return true;
  }
  ++report_.user_actions;
  if (draw(kPolicyPauseShare)) {
    const Json* policy = server_.peek("heartbeatpolicies", kPolicyNamespace, kPolicyName);
    const bool paused = controllers::bool_at(*policy, "spec/paused");
    Json spec = {{"paused", !paused}};
    if (!paused) spec["cancelRunning"] = draw(0.5);
    report_.policy_pauses += paused ? 0 : 1;
    server_.merge_patch(Actor::kUser, "heartbeatpolicies", kPolicyNamespace, kPolicyName,
                        {{"spec", spec}}, false);
    return true;
  }
  Json spec = draw(0.5) ? Json{{"maxConcurrentRuns",
                                std::uniform_int_distribution<int64_t>(1, kPolicyCapMax)(rng_)}}
                        : Json{{"budget", team_budget()}};
  server_.merge_patch(Actor::kUser, "heartbeatpolicies", kPolicyNamespace, kPolicyName,
                      {{"spec", spec}}, false);
  return true;
}

namespace {

std::string annotation_of(const Json& agent, const char* key) {
  const Json* annotations = controllers::find_path(agent, "metadata/annotations");
  if (annotations == nullptr || !annotations->is_object()) return {};
  return annotations->value(key, std::string());
}

}  // namespace

// The Agent's author deletes it and applies it again at once (a new UID,
// no status): its month's spend and any budget hold must come back.
// The author sets a run's heartbeat.dev/policies annotation to no policy
// or to another one of the namespace (a run not yet counted, when it has
// one): the charge must not follow it.
void World::rewrite_policies_stamp(const std::string& ns, const std::string& agent) {
  std::vector<std::string> runs;
  server_.for_each("heartbeatruns", [&](const Json& run) {
    if (controllers::string_at(run, "metadata/namespace") == ns &&
        controllers::string_at(run, "spec/agentRef/name") == agent &&
        !controllers::bool_at(run, "status/costRecorded")) {
      runs.push_back(controllers::string_at(run, "metadata/name"));
    }
  });
  if (runs.empty()) return;
  const std::string run =
      runs[std::uniform_int_distribution<std::size_t>(0, runs.size() - 1)(rng_)];
  const std::string stamp = std::bernoulli_distribution(0.5)(rng_) ? "" : "team-b";
  server_.merge_patch(
      Actor::kUser, "heartbeatruns", ns, run,
      {{"metadata", {{"annotations", {{controllers::kAnnotationPolicies, stamp}}}}}}, false);
  ++report_.stamp_edits;
}

void World::reapply_agent(const Json& agent) {
  const std::string ns = controllers::string_at(agent, "metadata/namespace");
  const std::string name = controllers::string_at(agent, "metadata/name");
  Json again = {{"apiVersion", agent["apiVersion"]},
                {"kind", agent["kind"]},
                {"metadata", {{"name", name}}},
                {"spec", agent["spec"]}};
  for (const char* key : {"labels", "annotations"}) {
    if (const Json* value = controllers::find_path(agent, std::string("metadata/") + key)) {
      again["metadata"][key] = *value;
    }
  }
  server_.remove(Actor::kUser, "agents", ns, name, Json::object());
  server_.create(Actor::kUser, "agents", ns, again);
  ++report_.reapplies;
}

// What a person does with kubectl: pause or resume, invoke, change the
// budget or its resume policy, approve a budget stop, change the prompt,
// create a run, zero the prices (or put them back), delete and re-apply,
// rewrite a run's policies stamp (to escape its team or charge another).
void World::user_action() {
  if (draw(kPolicyActionShare) && policy_action()) return;
  std::vector<Json> agents = server_.objects("agents");
  if (agents.empty()) return;
  Json agent = agents[std::uniform_int_distribution<std::size_t>(0, agents.size() - 1)(rng_)];
  const std::string ns = controllers::string_at(agent, "metadata/namespace");
  const std::string name = controllers::string_at(agent, "metadata/name");
  ++report_.user_actions;
  Json patch;
  switch (std::uniform_int_distribution<int>(0, 8)(rng_)) {
    case 0: {
      const bool pause = !controllers::bool_at(agent, "spec/paused");
      patch = {{"spec", {{"paused", pause}}},
               {"metadata", {{"annotations", {{"sim-paused-at", format_rfc3339(now_)}}}}}};
      break;
    }
    case 1: {
      // Half the time a GitOps sync re-applies the value already there (no
      // new run may follow); else a new value (exactly one run).
      const std::string current = annotation_of(agent, controllers::kAnnotationInvoke);
      const bool resync = !current.empty() && std::bernoulli_distribution(0.5)(rng_);
      const std::string value = resync ? current : "sim-" + std::to_string(report_.user_actions);
      patch = {{"metadata",
                {{"annotations",
                  {{"heartbeat.dev/invoke", value}, {"sim-synced-at", format_rfc3339(now_)}}}}}};
      break;
    }
    case 2:  // a new budget, and now and then the other resume policy
      patch = {{"spec", {{"budget", agent_budget()}}}};
      patch["spec"]["budget"]["resume"] =
          std::bernoulli_distribution(0.3)(rng_) ? "NextPeriod" : "Manual";
      break;
    case 5: {  // approve a budget stop: a new heartbeat.dev/resume value, or a resync of the old
      const bool resync = std::bernoulli_distribution(0.3)(rng_);
      const std::string current = annotation_of(agent, controllers::kAnnotationResume);
      const std::string value =
          resync && !current.empty() ? current : "ok-" + std::to_string(report_.user_actions);
      patch = {{"metadata", {{"annotations", {{controllers::kAnnotationResume, value}}}}}};
      break;
    }
    case 3: {  // blank the prompt (scheduled slots are skipped) or give it back
      const bool blank = !controllers::string_at(agent, "spec/heartbeat/prompt").empty();
      patch = {{"spec", {{"heartbeat", {{"prompt", blank ? "" : "Heartbeat."}}}}}};
      break;
    }
    case 6:
      reapply_agent(agent);
      return;
    case 8:
      rewrite_policies_stamp(ns, name);
      return;
    case 7: {  // the author zeroes the prices (runs cost nothing), or puts them back
      const bool zero =
          controllers::number_at(agent, "spec/model/pricing/inputCentsPerMillionTokens")
              .value_or(0) > 0;
      patch = {{"spec",
                {{"model",
                  {{"pricing",
                    {{"inputCentsPerMillionTokens", zero ? 0 : 15},
                     {"outputCentsPerMillionTokens", zero ? 0 : 60}}}}}}}};
      ++report_.price_changes;
      break;
    }
    default: {  // kubectl create -f run.yaml
      Json run = {{"apiVersion", "heartbeat.dev/v1alpha1"},
                  {"kind", "HeartbeatRun"},
                  {"metadata", {{"generateName", name + "-manual-"}}},
                  {"spec", {{"agentRef", {{"name", name}}}, {"invocationSource", "manual"}}}};
      server_.create(Actor::kUser, "heartbeatruns", ns, run);
      return;
    }
  }
  server_.merge_patch(Actor::kUser, "agents", ns, name, patch, false);
}

TimePoint World::next_time() {
  TimePoint next = now_ + kStepMax;
  const char* who = "max";
  auto take = [&](std::optional<TimePoint> t, const char* name) {
    if (t && *t < next) {
      next = *t;
      who = name;
    }
  };
  take(node_.next_due(), "node");
  take(next_user_, "user");
  if (faults_) {
    take(next_crash_, "crash");
    take(next_relist_, "relist");
    take(next_freeze_, "freeze");
  }
  for (const Replica& r : replicas_) {
    if (!r.op) {
      take(r.restart_at, "restart");
      continue;
    }
    if (now_ < r.frozen_until) {
      take(r.frozen_until, "thaw");
      continue;
    }
    for (Feed* f : r.op->feeds) take(f->next_arrival(), "feed");
    take(r.op->next_election, "election");
    if (r.op->leading) take(r.op->next_policy_status, "policy status");
    if (auto ready = r.op->queue.next_ready_at(); ready && r.op->leading) {
      take(now_ + (*ready - steady_now()), "queue");
    }
  }
  if (getenv("HB_SIM_DEBUG") && next <= now_) spdlog::warn("sim stuck on {}", who);
  return std::max(next, now_ + 1ms);
}

void World::step() {
  ++report_.steps;
  node_.step(now_);
  for (std::size_t i = 0; i < kReplicas; ++i) step_replica(i);
  if (faults_ && now_ >= next_relist_) {  // a watch ended with 410: that resource relists
    if (auto i = random_live_replica()) {
      std::vector<Feed*>& feeds = replicas_[*i].op->feeds;
      feeds[std::uniform_int_distribution<std::size_t>(0, feeds.size() - 1)(rng_)]->relist(now_);
      ++report_.relists;
    }
    next_relist_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(60, 1800)(rng_));
  }
  if (faults_ && now_ >= next_jump_) jump_operator_clock();
  if (faults_ && now_ >= next_crash_) {
    if (auto i = random_live_replica()) crash_operator(*i, "crash");
    next_crash_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(300, 3600)(rng_));
  }
  if (faults_ && now_ >= next_outage_) begin_run_status_outage();
  if (faults_ && now_ >= next_freeze_) {
    freeze_leader();
    next_freeze_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(600, 3600)(rng_));
  }
  if (now_ >= next_user_) {
    user_action();
    next_user_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(60, 900)(rng_));
  }
  // Deadlines are held against an operator that could write for long
  // enough: since it leads, and since the last outage ended.
  const OperatorProcess* lead = leader();
  checker_.check_state(operator_now(), std::max(lead ? lead->leading_since : now_, outage_until_));
  if (now_ >= next_forget_) {
    forget_delivered_changes();
    next_forget_ = now_ + kForgetChangesEvery;
  }
}

// Each resource's log keeps what its slowest live watch has not taken; a
// crashed replica's watches are gone, and a new one lists first.
void World::forget_delivered_changes() {
  std::map<std::string, uint64_t> keep_from;
  for (const Replica& r : replicas_) {
    if (!r.op) continue;
    for (const Feed* f : r.op->feeds) {
      auto [it, first] = keep_from.try_emplace(f->resource(), f->position());
      if (!first) it->second = std::min(it->second, f->position());
    }
  }
  server_.forget_changes(keep_from);
}

void World::begin_run_status_outage() {
  outage_until_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(
                             kOutageSecondsMin, kOutageSecondsMax)(rng_));
  next_outage_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(
                            kOutageEverySecondsMin, kOutageEverySecondsMax)(rng_));
  ++report_.run_status_outages;
  if (options_.verbose) {
    spdlog::info("sim run status writes fail until {}", format_rfc3339(outage_until_));
  }
}

bool World::in_run_status_outage(const http::Request& r) const {
  return now_ < outage_until_ && r.method != "GET" &&
         r.url.find("/heartbeatruns/") != std::string::npos &&
         r.url.find("/status") != std::string::npos;
}

// The operator's wall clock steps (an NTP correction, a VM resumed), forward
// or back, by up to kClockJumpMax, staying within kClockSkewMax of true
// time; its steady clock does not move. Deterministic run names and the
// recorded last slot must keep a slot from running twice.
void World::jump_operator_clock() {
  const auto jump = std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(
      -kClockJumpMax.count() * 1000, kClockJumpMax.count() * 1000)(rng_));
  const auto bound = std::chrono::duration_cast<std::chrono::milliseconds>(kClockSkewMax);
  operator_skew_ = std::clamp(operator_skew_ + jump, -bound, bound);
  ++report_.clock_jumps;
  if (options_.verbose) {
    spdlog::info("sim operator clock jumped {} ms (skew now {} ms)", jump.count(),
                 operator_skew_.count());
  }
  next_jump_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(600, 3600)(rng_));
}

SimReport World::run() {
  const auto wall_start = std::chrono::steady_clock::now();
  create_agents();
  create_policy();
  for (std::size_t i = 0; i < kReplicas; ++i) start_operator(i);
  next_user_ = now_ + 5min;
  next_crash_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(300, 3600)(rng_));
  next_relist_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(60, 1800)(rng_));
  next_jump_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(300, 3600)(rng_));
  next_freeze_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(300, 3600)(rng_));
  next_outage_ = now_ + std::chrono::seconds(std::uniform_int_distribution<int>(
                            kOutageEverySecondsMin / 2, kOutageEverySecondsMax)(rng_));
  const TimePoint end = start_ + std::chrono::seconds(static_cast<int64_t>(options_.hours * 3600));
  while (now_ < end && checker_.violations().empty() && report_.violations.empty()) {
    step();
    now_ = next_time();
  }
  // The drain: no faults, every Agent paused; what runs ends and is counted.
  faults_ = false;
  outage_until_ = std::min(outage_until_, now_);
  operator_transport_->set_faults({});
  runner_transport_->set_faults({});
  for (const Json& a : server_.objects("agents")) {
    server_.merge_patch(
        Actor::kUser, "agents", controllers::string_at(a, "metadata/namespace"),
        controllers::string_at(a, "metadata/name"),
        {{"spec", {{"paused", true}}},
         {"metadata", {{"annotations", {{"sim-paused-at", format_rfc3339(now_)}}}}}},
        false);
  }
  next_user_ = end + kDrain * 2;
  for (std::size_t i = 0; i < kReplicas; ++i) {
    if (!replicas_[i].op) start_operator(i);
    replicas_[i].frozen_until = now_;
  }
  const TimePoint drained = now_ + kDrain;
  while (now_ < drained && checker_.violations().empty() && report_.violations.empty()) {
    step();
    now_ = next_time();
  }
  if (checker_.violations().empty()) checker_.check_settled();
  report_.violations.insert(report_.violations.end(), checker_.violations().begin(),
                            checker_.violations().end());
  report_.runs_counted = checker_.runs_counted();
  report_.team_overshoot_cents = checker_.worst_team_overshoot().cents;
  report_.team_overshoot_calls = checker_.worst_team_overshoot().calls;
  report_.team_overshoot_runs = checker_.worst_team_overshoot().runs;
  report_.run_overshoot_calls = checker_.worst_run_overshoot_calls();
  report_.run_overshoot_calls_after_change = checker_.worst_run_overshoot_calls_after_change();
  report_.api_faults = operator_transport_->stats().faults + runner_transport_->stats().faults;
  report_.node = node_.stats();
  report_.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return report_;
}

SimReport simulate(const SimOptions& options) {
  World world(options);
  return world.run();
}

std::string replay_command(const std::string& program, const SimOptions& o) {
  std::ostringstream out;
  out << program << " --seed=" << o.seed << " --seeds=1 --hours=" << o.hours
      << " --agents=" << o.agents << " --max-concurrent-runs=" << o.max_concurrent_runs
      << " --policy-max-concurrent-runs=" << o.policy_max_concurrent_runs
      << (o.faults ? "" : " --no-faults") << (o.start.empty() ? "" : " --start=" + o.start)
      << " --verbose";
  return out.str();
}

}  // namespace hb::sim
