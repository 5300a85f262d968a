// The simulation's node: the Job controller (a Pod per Job, the Job's
// deadline, its conditions), the kubelet (Pending -> Running -> terminated,
// graceful deletion) and the runner inside (what it does is drawn from the
// seed: succeeds, fails, pauses the agent, stalls, is killed, forges its
// result, overruns its deadline), beating the agent's Lease on its own
// skewed clock through its own faulty client.
#pragma once

#include <map>
#include <random>

#include "kube/client.h"
#include "tests/sim/api_server.h"

namespace hb::sim {

// The node's writes as pure functions of the object and the time, shared
// with the capacity benchmark's node (bench/operator/capacity_node.h).
// The Pod the Job controller makes for `job` (Pending, owned by the Job).
Json pod_for_job(const Json& job);
// `job` once its Pod is made: started at `now`, one active.
Json job_started(Json job, TimePoint now);
// `pod` as the kubelet reports it running since `now`.
Json pod_running(Json pod, TimePoint now);
// `pod` as the kubelet reports its runner container ended at `now`
// (`message`: the termination message, empty for none).
Json pod_terminated(Json pod, TimePoint running_at, int exit_code, const std::string& message,
                    TimePoint now);
// `job` as the Job controller records its Pod's end.
Json job_settled(Json job, bool succeeded);
// The runner's beat: the merge patch of its agent's Lease, renewed at
// `runner_now` (its own clock) with the usage it reports so far.
Json lease_beat_patch(const std::string& run, int64_t input_tokens, int64_t output_tokens,
                      TimePoint runner_now);

enum class RunnerBehaviour {
  kSucceeds,
  kPauses,    // succeeds and asks for pause_heartbeats
  kFails,     // exit 1 with a result
  kKilled,    // SIGKILL mid-run: no result
  kStalls,    // stops beating and never ends by itself
  kForges,    // a termination message meant to cheat the ledger
  kOverruns,  // runs past its deadline
};
const char* to_string(RunnerBehaviour b);

struct NodeStats {
  uint64_t pods = 0;
  uint64_t by_behaviour[7] = {};
};

class Node {
 public:
  // `runner_client` is the runner's own kube::Client (its Lease beats).
  Node(ApiServer& server, std::shared_ptr<kube::Client> runner_client, std::mt19937_64& rng,
       std::chrono::seconds runner_skew);

  // Everything due by `now`.
  void step(TimePoint now);
  // The next time something is due here.
  std::optional<TimePoint> next_due() const;
  const NodeStats& stats() const { return stats_; }
  // When the runner of run "ns/name" last beat (a Lease write that
  // succeeded), on true time.
  std::optional<TimePoint> last_beat(const std::string& run_key) const;

 private:
  struct Runner {
    RunnerBehaviour behaviour = RunnerBehaviour::kSucceeds;
    TimePoint running_at{}, ends_at{}, next_beat{};
    bool started = false, finished = false, silent = false;
    std::optional<TimePoint> finalize_at;  // deleted: removed from the API at this time
    int64_t input_tokens = 0, output_tokens = 0;
    int64_t llm_calls = kSimCallsPerRun;
    bool budget_stop = false;  // stopped before a call its budget could not pay
    std::string ns, agent, run;
  };
  // Calls a simulated heartbeat makes when its budget allows them all.
  static constexpr int64_t kSimCallsPerRun = 3;
  // As the runner does: the calls (of equal size) the context document's
  // budget pays for; the rest are not made.
  static void stop_at_budget(Runner& r, const Json& pod_annotations);
  void start_pods(TimePoint now);
  void create_pod(const Json& job, TimePoint now);
  void advance(const std::string& key, Runner& r, TimePoint now);
  void terminate(Json pod, Runner& r, int exit_code, const std::string& message, TimePoint now);
  void beat(Runner& r, TimePoint now);
  void job_deadlines(TimePoint now);
  void settle_job(const Json& pod, int exit_code);
  std::string result_message(const Runner& r, int exit_code);

  ApiServer& server_;
  std::shared_ptr<kube::Client> runner_client_;
  std::mt19937_64& rng_;
  std::chrono::seconds runner_skew_;
  std::map<std::string, Runner> runners_;       // by "ns/pod"
  std::map<std::string, TimePoint> job_seen_;   // "ns/job" -> when its Pod is made
  std::map<std::string, TimePoint> last_beat_;  // "ns/run" -> its last beat (true time)
  // The Jobs are scanned again only when one changed or a time noted here
  // comes: the Job version each scan saw, and the earliest deadline it left.
  uint64_t pods_started_for_jobs_ = 0, deadlines_checked_for_jobs_ = 0;
  std::optional<TimePoint> next_job_deadline_;
  NodeStats stats_;
};

}  // namespace hb::sim
