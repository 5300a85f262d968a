#include "tests/sim/node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "api/exit_codes.h"
#include "api/heartbeat_pod.h"
#include "api/run_result.h"
#include "api/usage_report.h"
#include "controllers/model/json_util.h"
#include "controllers/model/names.h"
#include "controllers/pod/job_pods.h"
#include "controllers/schedule/utc_time.h"

namespace hb::sim {

namespace {

using schedule::format_rfc3339;
using namespace std::chrono_literals;

constexpr auto kPodCreateDelayMax = 2000ms;
constexpr auto kPodStartDelayMax = 3000ms;
constexpr auto kRunnerBeatEvery = 10s;
constexpr auto kRunnerWorkMax = 90s;
constexpr auto kPodDeleteGrace = 1s;
constexpr auto kStallAfter = 5s;
constexpr int kExitSigkill =
    api::kExitSignalBase + 9;  // a stalling runner's last beat comes this soon
// Pricing every simulated Agent declares (cents per million tokens).
constexpr double kInputCentsPerMillion = 15, kOutputCentsPerMillion = 60;

std::string micro_time(TimePoint t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch());
  std::string s = format_rfc3339(t);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06lldZ", static_cast<long long>(us.count() % 1000000));
  return s.substr(0, s.size() - 1) + frac;
}

using controllers::name_of;
using controllers::namespace_of;

bool job_finished(const Json& job) {
  const Json* conditions = controllers::find_path(job, "status/conditions");
  return conditions != nullptr && conditions->is_array() && !conditions->empty();
}

RunnerBehaviour draw_behaviour(std::mt19937_64& rng) {
  const int roll = std::uniform_int_distribution<int>(0, 99)(rng);
  if (roll < 55) return RunnerBehaviour::kSucceeds;
  if (roll < 67) return RunnerBehaviour::kPauses;
  if (roll < 77) return RunnerBehaviour::kFails;
  if (roll < 83) return RunnerBehaviour::kKilled;
  if (roll < 88) return RunnerBehaviour::kStalls;
  if (roll < 94) return RunnerBehaviour::kForges;
  return RunnerBehaviour::kOverruns;
}

}  // namespace

const char* to_string(RunnerBehaviour b) {
  static const char* names[] = {"succeeds", "pauses", "fails",   "killed",
                                "stalls",   "forges", "overruns"};
  return names[static_cast<int>(b)];
}

Json pod_for_job(const Json& job) {
  const std::string uid = controllers::string_at(job, "metadata/uid");
  Json meta = job["spec"]["template"].value("metadata", Json::object());
  meta["generateName"] = name_of(job) + "-";
  meta["labels"][controllers::kLabelControllerUid] = uid;
  meta["labels"][controllers::kLabelBatchControllerUid] = uid;
  meta["labels"][controllers::kLabelJobName] = name_of(job);
  meta["ownerReferences"] = Json::array({{{"apiVersion", "batch/v1"},
                                          {"kind", "Job"},
                                          {"name", name_of(job)},
                                          {"uid", uid},
                                          {"controller", true}}});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", meta},
          {"spec", job["spec"]["template"].value("spec", Json::object())},
          {"status", {{"phase", "Pending"}}}};
}

Json job_started(Json job, TimePoint now) {
  job["status"]["startTime"] = format_rfc3339(now);
  job["status"]["active"] = 1;
  return job;
}

Json pod_running(Json pod, TimePoint now) {
  pod["status"] = {
      {"phase", "Running"},
      {"startTime", format_rfc3339(now)},
      {"containerStatuses",
       Json::array({{{"name", api::kRunnerContainerName},
                     {"ready", true},
                     {"state", {{"running", {{"startedAt", format_rfc3339(now)}}}}}}})}};
  return pod;
}

Json pod_terminated(Json pod, TimePoint running_at, int exit_code, const std::string& message,
                    TimePoint now) {
  Json terminated = {{"exitCode", exit_code},
                     {"reason", exit_code == 0 ? "Completed" : "Error"},
                     {"startedAt", format_rfc3339(running_at)},
                     {"finishedAt", format_rfc3339(now)}};
  // The kubelet keeps at most 4096 bytes of a termination message.
  if (!message.empty()) terminated["message"] = message.substr(0, api::kTerminationMessageBytesMax);
  pod["status"]["phase"] = exit_code == 0 ? "Succeeded" : "Failed";
  pod["status"]["containerStatuses"] = Json::array({{{"name", api::kRunnerContainerName},
                                                     {"ready", false},
                                                     {"state", {{"terminated", terminated}}}}});
  return pod;
}

Json lease_beat_patch(const std::string& run, int64_t input_tokens, int64_t output_tokens,
                      TimePoint runner_now) {
  api::UsageReport usage;
  usage.run = run;
  usage.llm_calls = 1;
  usage.input_tokens = input_tokens;
  usage.output_tokens = output_tokens;
  Json spec = {
      {"holderIdentity", run}, {"leaseDurationSeconds", 60}, {"renewTime", micro_time(runner_now)}};
  return {{"spec", spec},
          {"metadata", {{"annotations", {{api::kAnnotationUsage, encode_usage_report(usage)}}}}}};
}

Json job_settled(Json job, bool succeeded) {
  job["status"]["active"] = 0;
  job["status"][succeeded ? "succeeded" : "failed"] = 1;
  job["status"]["conditions"] =
      Json::array({{{"type", succeeded ? "Complete" : "Failed"},
                    {"status", "True"},
                    {"reason", succeeded ? "" : "BackoffLimitExceeded"},
                    {"message", succeeded ? "" : "Job has reached the specified backoff limit"}}});
  return job;
}

Node::Node(ApiServer& server, std::shared_ptr<kube::Client> runner_client, std::mt19937_64& rng,
           std::chrono::seconds runner_skew)
    : server_(server),
      runner_client_(std::move(runner_client)),
      rng_(rng),
      runner_skew_(runner_skew) {}

void Node::step(TimePoint now) {
  if (server_.removed_since_collection()) server_.collect_garbage();
  job_deadlines(now);
  start_pods(now);
  for (auto it = runners_.begin(); it != runners_.end();) {
    advance(it->first, it->second, now);
    if (it->second.finalize_at && *it->second.finalize_at <= now) {
      const auto slash = it->first.find('/');
      server_.finalize_pod(it->first.substr(0, slash), it->first.substr(slash + 1));
      it = runners_.erase(it);
    } else if (!server_.peek("pods", it->first.substr(0, it->first.find('/')),
                             it->first.substr(it->first.find('/') + 1))) {
      it = runners_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<TimePoint> Node::next_due() const {
  std::optional<TimePoint> next;
  auto take = [&](TimePoint t) { next = next ? std::min(*next, t) : t; };
  for (const auto& [key, at] : job_seen_) take(at);
  for (const auto& [key, r] : runners_) {
    if (r.finalize_at) take(*r.finalize_at);
    if (r.finished) continue;
    if (!r.started) {
      take(r.running_at);
    } else if (r.behaviour == RunnerBehaviour::kStalls) {
      if (!r.silent) take(std::min(r.next_beat, r.running_at + kStallAfter));
    } else {
      take(std::min(r.ends_at, r.next_beat));
    }
  }
  return next;
}

void Node::start_pods(TimePoint now) {
  const bool pod_due = std::any_of(job_seen_.begin(), job_seen_.end(),
                                   [&](const auto& seen) { return seen.second <= now; });
  if (!pod_due && server_.version_of("jobs") == pods_started_for_jobs_) return;
  std::vector<Json> waiting;  // Jobs without their Pod yet
  server_.for_each("jobs", [&](const Json& job) {
    if (!job_finished(job) && controllers::find_path(job, "status/startTime") == nullptr) {
      waiting.push_back(job);
    }
  });
  for (const Json& job : waiting) {
    const std::string key = controllers::object_key(job);
    auto seen = job_seen_.find(key);
    if (seen == job_seen_.end()) {
      const auto delay = std::uniform_int_distribution<int>(100, kPodCreateDelayMax.count())(rng_);
      job_seen_[key] = now + std::chrono::milliseconds(delay);
      continue;
    }
    if (seen->second > now) continue;
    job_seen_.erase(seen);
    create_pod(job, now);
  }
  for (auto it = job_seen_.begin(); it != job_seen_.end();) {  // Jobs deleted meanwhile
    const auto slash = it->first.find('/');
    it = server_.peek("jobs", it->first.substr(0, slash), it->first.substr(slash + 1))
             ? std::next(it)
             : job_seen_.erase(it);
  }
  pods_started_for_jobs_ = server_.version_of("jobs");
}

void Node::create_pod(const Json& job, TimePoint now) {
  const std::string ns = namespace_of(job);
  const Answer made = server_.create(Actor::kNode, "pods", ns, pod_for_job(job));
  server_.node_update("jobs", job_started(job, now));

  Runner r;
  r.behaviour = draw_behaviour(rng_);
  r.ns = ns;
  // Annotation keys hold '/', so they are read by key, not by path.
  const Json annotations = made.body["metadata"].value("annotations", Json::object());
  r.agent = annotations.value(controllers::kAnnotationAgentName, std::string());
  r.run = annotations.value(controllers::kAnnotationRunName, std::string());
  r.running_at = now + std::chrono::milliseconds(std::uniform_int_distribution<int>(
                           200, kPodStartDelayMax.count())(rng_));
  auto work = std::chrono::milliseconds(std::uniform_int_distribution<int>(
      1000, std::chrono::milliseconds(kRunnerWorkMax).count())(rng_));
  if (r.behaviour == RunnerBehaviour::kOverruns) {
    work = std::chrono::seconds(job["spec"].value("activeDeadlineSeconds", 600) * 3);
  }
  r.ends_at = r.running_at + work;
  r.next_beat = r.running_at;
  r.input_tokens = std::uniform_int_distribution<int64_t>(100, 30000)(rng_);
  r.output_tokens = std::uniform_int_distribution<int64_t>(10, 3000)(rng_);
  stop_at_budget(r, annotations);
  ++stats_.pods;
  ++stats_.by_behaviour[static_cast<int>(r.behaviour)];
  runners_[ns + "/" + name_of(made.body)] = r;
}

void Node::stop_at_budget(Runner& r, const Json& pod_annotations) {
  const auto context = pod_annotations.find(controllers::kAnnotationContext);
  if (context == pod_annotations.end() || !context->is_string()) return;
  const api::ContextDocumentResult parsed =
      api::parse_context_document_text(context->get<std::string>());
  // A bad document: the runner would exit with an error; the run is charged its bound either way.
  if (!parsed.ok()) return;
  const api::ContextDocument& doc = parsed.value();
  const std::optional<double> limit = doc.budget.run_limit_cents();
  if (!limit) return;
  const int64_t in = r.input_tokens / kSimCallsPerRun, out = r.output_tokens / kSimCallsPerRun;
  const double call =
      (static_cast<double>(in) * doc.model.pricing.input_cents_per_million_tokens +
       static_cast<double>(out) * doc.model.pricing.output_cents_per_million_tokens) /
      1e6;
  int64_t calls = kSimCallsPerRun;
  while (calls > 0 && static_cast<double>(calls) * call > *limit) --calls;
  if (calls == kSimCallsPerRun) return;
  r.llm_calls = calls;
  r.budget_stop = true;
  r.input_tokens = in * calls;
  r.output_tokens = out * calls;
}

void Node::advance(const std::string& key, Runner& r, TimePoint now) {
  if (r.finished && r.finalize_at) return;
  const auto slash = key.find('/');
  const Json* pod = server_.peek("pods", key.substr(0, slash), key.substr(slash + 1));
  if (pod == nullptr) return;
  if ((*pod)["metadata"].contains("deletionTimestamp")) {
    if (!r.finished)
      terminate(*pod, r, api::kExitCancelled, result_message(r, api::kExitCancelled), now);
    if (!r.finalize_at) r.finalize_at = now + kPodDeleteGrace;
    return;
  }
  if (r.finished) return;
  if (!r.started) {
    if (now < r.running_at) return;
    r.started = true;
    server_.node_update("pods", pod_running(*pod, now));
  }
  const bool stalled = r.behaviour == RunnerBehaviour::kStalls && now > r.running_at + kStallAfter;
  r.silent = stalled;  // then nothing until it is killed
  if (!stalled && now >= r.next_beat) {
    beat(r, now);
    r.next_beat = now + kRunnerBeatEvery;
  }
  if (r.behaviour == RunnerBehaviour::kStalls || now < r.ends_at) return;
  int exit_code = 0;
  // Half the failures are the model provider's (the runner's exit 69):
  // interval agents back off from them.
  if (r.behaviour == RunnerBehaviour::kFails) {
    exit_code = std::bernoulli_distribution(0.5)(rng_) ? api::kExitProviderError : 1;
  }
  if (r.behaviour == RunnerBehaviour::kKilled) exit_code = kExitSigkill;
  terminate(*pod, r, exit_code, result_message(r, exit_code), now);
}

// The real runner's result, rendered by the one render function; a forging
// runner writes what it likes instead.
std::string Node::result_message(const Runner& r, int exit_code) {
  if (exit_code == kExitSigkill) return "";  // the runner wrote nothing
  api::RunResult result;
  result.stop_reason =
      exit_code == api::kExitFinished ? (r.budget_stop ? "budget" : "done") : "error";
  result.input_tokens = r.input_tokens;
  result.output_tokens = r.output_tokens;
  result.cost_cents =
      (r.input_tokens * kInputCentsPerMillion + r.output_tokens * kOutputCentsPerMillion) / 1e6;
  result.llm_calls = r.llm_calls;
  result.tool_calls = 2;
  // Half the heartbeats find nothing to do (idle backoff's agents stretch).
  result.action_tool_calls = std::bernoulli_distribution(0.5)(rng_) ? 0 : 2;
  result.iterations = 3;
  result.output = "simulated heartbeat of " + r.run;
  // Some idle-looking runs (no action) tell another agent: they acted.
  if (result.action_tool_calls == 0 && std::bernoulli_distribution(0.2)(rng_)) {
    result.output += "; @sim-peer please look";
  }
  if (r.behaviour == RunnerBehaviour::kPauses) {
    result.pause_minutes = std::uniform_int_distribution<int>(1, 45)(rng_);
  }
  if (r.behaviour != RunnerBehaviour::kForges) return api::render_result(result);
  Json forged = api::result_to_json(result);
  switch (std::uniform_int_distribution<int>(0, 4)(rng_)) {
    case 0:
      return "{\"usage\": not json";
    case 1:
      forged["usage"]["inputTokens"] = 1000000000000000LL;  // bill someone else's month
      return forged.dump();
    case 2:
      forged["usage"]["inputTokens"] = -5000000;  // a refund
      return forged.dump();
    case 3:
      forged["usage"]["costCents"] = 0;  // "it was free"
      return forged.dump();
    default:
      forged["output"] = std::string(5000, 'x');  // past the 4096-byte limit
      return forged.dump();
  }
}

void Node::terminate(Json pod, Runner& r, int exit_code, const std::string& message,
                     TimePoint now) {
  r.finished = true;
  pod = pod_terminated(std::move(pod), r.running_at, exit_code, message, now);
  server_.node_update("pods", pod);
  settle_job(pod, exit_code);
}

void Node::settle_job(const Json& pod, int exit_code) {
  const std::string job_name =
      controllers::string_at(pod, std::string("metadata/labels/") + controllers::kLabelJobName);
  std::optional<Json> job = server_.object("jobs", namespace_of(pod), job_name);
  if (!job || job_finished(*job)) return;
  server_.node_update("jobs", job_settled(std::move(*job), exit_code == 0));
}

void Node::job_deadlines(TimePoint now) {
  if (server_.version_of("jobs") == deadlines_checked_for_jobs_ &&
      (!next_job_deadline_ || now < *next_job_deadline_)) {
    return;
  }
  std::vector<Json> overdue;
  next_job_deadline_.reset();
  server_.for_each("jobs", [&](const Json& job) {
    const auto started = controllers::time_at(job, "status/startTime");
    const Json* deadline = controllers::find_path(job, "spec/activeDeadlineSeconds");
    if (job_finished(job) || !started || deadline == nullptr || !deadline->is_number_integer()) {
      return;
    }
    const TimePoint due = *started + std::chrono::seconds(deadline->get<int64_t>());
    if (now >= due) {
      overdue.push_back(job);
    } else {
      next_job_deadline_ = next_job_deadline_ ? std::min(*next_job_deadline_, due) : due;
    }
  });
  for (Json job : overdue) {
    job["status"]["conditions"] =
        Json::array({{{"type", "Failed"},
                      {"status", "True"},
                      {"reason", "DeadlineExceeded"},
                      {"message", "Job was active longer than specified deadline"}}});
    job["status"]["active"] = 0;
    job["status"]["failed"] = 1;
    server_.node_update("jobs", job);
    for (const Json& pod : server_.objects("pods", namespace_of(job))) {
      if (controllers::controlled_by_job(pod, controllers::string_at(job, "metadata/uid"))) {
        server_.remove(Actor::kNode, "pods", namespace_of(pod), name_of(pod), Json::object());
      }
    }
  }
  deadlines_checked_for_jobs_ = server_.version_of("jobs");
}

void Node::beat(Runner& r, TimePoint now) {
  const TimePoint runner_now = now + runner_skew_;
  const std::string lease = controllers::lease_name_for_agent(r.agent);
  const Json patch = lease_beat_patch(r.run, r.input_tokens / 2, r.output_tokens / 2, runner_now);
  const kube::Result<Json> beat =
      runner_client_->merge_patch(kube::resources::kLeases, r.ns, lease, patch);
  if (!beat.ok()) {
    // The runner beats again next time; a missed beat is what the stall window is for.
    spdlog::debug("sim runner {} beat failed: {}", r.run, beat.error().describe());
    return;
  }
  last_beat_[r.ns + "/" + r.run] = now;
}

std::optional<TimePoint> Node::last_beat(const std::string& run_key) const {
  auto it = last_beat_.find(run_key);
  if (it == last_beat_.end()) return std::nullopt;
  return it->second;
}

}  // namespace hb::sim
