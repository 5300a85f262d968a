#include "tests/support/fake_kubelet.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <cmath>
#include <functional>

#include "api/heartbeat_pod.h"
#include "api/rfc3339.h"
#include "controllers/model/json_util.h"
#include "controllers/model/names.h"
#include "controllers/schedule/utc_time.h"
#include "kube/errors.h"

namespace hb::testing {

using nlohmann::json;
using namespace std::chrono_literals;

namespace {
constexpr auto kLoopInterval = 100ms;
constexpr auto kBeatInterval = 1s;

std::string now_text() {
  return schedule::format_rfc3339(std::chrono::system_clock::now());
}
// What a kubelet says when it cannot build the runner container's env: a
// secretKeyRef to a Secret or key that does not exist. Empty when it can.
std::string secret_env_error(kube::Client& client, const std::string& ns, const json& pod) {
  const json* containers = controllers::find_path(pod, "spec/containers");
  if (containers == nullptr || !containers->is_array()) return {};
  for (const json& c : *containers) {
    if (controllers::string_at(c, "name") != api::kRunnerContainerName) continue;
    for (const json& e : c.value("env", json::array())) {
      const json* ref = controllers::find_path(e, "valueFrom/secretKeyRef");
      if (ref == nullptr) continue;
      const std::string name = controllers::string_at(*ref, "name");
      const std::string key = controllers::string_at(*ref, "key");
      try {
        const json secret = client.get(kube::resources::kSecrets, ns, name).or_throw();
        if (!secret.contains("data") || !secret["data"].contains(key)) {
          return "couldn't find key " + key + " in Secret " + ns + "/" + name;
        }
      } catch (const kube::ApiError&) {
        return "secret \"" + name + "\" not found";
      }
    }
  }
  return {};
}

// A Pod status patch: `phase`, and the runner container in `state`
// ({"running": ...}, {"waiting": ...} or {"terminated": ...}).
json runner_status_patch(const std::string& phase, bool ready, json state) {
  return {{"status",
           {{"phase", phase},
            {"containerStatuses", json::array({{{"name", api::kRunnerContainerName},
                                                {"ready", ready},
                                                {"restartCount", 0},
                                                {"image", "runner"},
                                                {"imageID", ""},
                                                {"state", std::move(state)}}})}}}};
}

}  // namespace

FakeKubelet::FakeKubelet(std::shared_ptr<kube::Client> client, std::string ns, Script script,
                         int workers)
    : client_(std::move(client)),
      ns_(std::move(ns)),
      script_(std::move(script)),
      workers_(workers),
      due_(static_cast<std::size_t>(workers)) {
  assert(workers_ >= 1);
  kube::InformerOptions options;
  options.namespace_ = ns_;
  options.watch_timeout_seconds = 1;  // see CacheOptions::watch_timeout_seconds
  options.label_selector =
      std::string(controllers::kLabelManagedBy) + "=" + controllers::kManagedByValue;
  pods_ = std::make_unique<kube::Informer>(client_, kube::resources::kPods, options);
  if (workers_ > 1) {
    kube::StoreHandlers handlers;
    handlers.on_change = [this](const std::string& key) {
      schedule(key, std::chrono::steady_clock::now());
    };
    pods_->set_handlers(std::move(handlers));
  }
}

FakeKubelet::~FakeKubelet() {
  stop();
}

void FakeKubelet::start() {
  pods_->start();
  if (workers_ == 1) {
    threads_.emplace_back([this] { loop(); });
    return;
  }
  for (int w = 0; w < workers_; ++w) threads_.emplace_back([this, w] { serve(w); });
}

void FakeKubelet::stop() {
  stop_ = true;
  due_changed_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  if (pods_) pods_->stop();
}

int FakeKubelet::pods_seen() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(states_.size());
}

std::string FakeKubelet::result(double cost_cents, std::optional<int> pause_minutes,
                                const std::string& stop_reason) {
  json r = {{"version", 1},
            {"stopReason", stop_reason},
            {"usage",
             {{"inputTokens", 1200},
              {"outputTokens", std::llround(cost_cents * 1e6 / kFakeOutputCentsPerMillionTokens)},
              {"costCents", cost_cents},
              {"llmCalls", 2},
              {"toolCalls", 1},
              {"iterations", 2}}},
            {"output", "checked the queue; nothing to do"}};
  if (pause_minutes) r["pauseMinutes"] = *pause_minutes;
  return r.dump();
}

void FakeKubelet::loop() {
  while (!stop_) {
    for (const json& pod : pods_->store().list()) {
      try {
        step(pod);
      } catch (const std::exception& e) {
        spdlog::debug("fake kubelet: pod {}: {}", controllers::string_at(pod, "metadata/name"),
                      e.what());
      }
    }
    std::this_thread::sleep_for(kLoopInterval);
  }
}

std::size_t FakeKubelet::worker_of(const std::string& key) const {
  return std::hash<std::string>{}(key) % static_cast<std::size_t>(workers_);
}

void FakeKubelet::schedule(const std::string& key, SteadyTime at) {
  {
    std::lock_guard lock(due_mutex_);
    due_[worker_of(key)].schedule(key, at);
  }
  due_changed_.notify_all();
}

std::optional<FakeKubelet::SteadyTime> FakeKubelet::next_due(const std::string& uid,
                                                             SteadyTime now) const {
  std::lock_guard lock(mutex_);
  const auto it = states_.find(uid);
  if (it == states_.end() || it->second.finished) return std::nullopt;
  const PodState& s = it->second;
  if (!s.running_written) return now + kLoopInterval;  // e.g. its Secret is missing: again
  std::optional<SteadyTime> due;
  if (!s.script.hang) due = s.started + s.script.run_for;
  if (s.script.beat) {
    const SteadyTime beat = s.last_beat + kBeatInterval;
    due = due ? std::min(*due, beat) : beat;
  }
  return due;
}

void FakeKubelet::serve(int worker) {
  auto& mine = due_[static_cast<std::size_t>(worker)];
  while (!stop_) {
    std::string key;
    {
      std::unique_lock lock(due_mutex_);
      if (mine.empty()) {
        due_changed_.wait_for(lock, kLoopInterval);
        continue;
      }
      const SteadyTime first_at = mine.first_at();
      if (first_at > std::chrono::steady_clock::now()) {
        due_changed_.wait_until(
            lock, std::min(first_at, std::chrono::steady_clock::now() + kLoopInterval));
        continue;
      }
      key = mine.pop_first();
    }
    const std::optional<json> pod = pods_->store().get(key);
    if (!pod) continue;  // gone
    try {
      step(*pod);
    } catch (const std::exception& e) {
      spdlog::debug("fake kubelet: pod {}: {}", key, e.what());
      schedule(key, std::chrono::steady_clock::now() + kLoopInterval);
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (auto due = next_due(controllers::string_at(*pod, "metadata/uid"), now)) schedule(key, *due);
  }
}

void FakeKubelet::beat(const json& pod) {
  const json* annotations = controllers::find_path(pod, "metadata/annotations");
  if (annotations == nullptr || !annotations->contains(controllers::kAnnotationAgentName)) return;
  const std::string agent_name = (*annotations)[controllers::kAnnotationAgentName];
  const json patch = {{"spec",
                       {{"holderIdentity", controllers::string_at(pod, "metadata/name")},
                        {"renewTime", api::format_micro_time(std::chrono::system_clock::now())}}}};
  client_
      ->merge_patch(kube::resources::kLeases, ns_, controllers::lease_name_for_agent(agent_name),
                    patch)
      .or_throw();
}

void FakeKubelet::step(const json& pod) {
  const std::string uid = controllers::string_at(pod, "metadata/uid");
  const std::string name = controllers::string_at(pod, "metadata/name");
  const auto now = std::chrono::steady_clock::now();
  PodState state;
  {
    std::lock_guard lock(mutex_);
    auto it = states_.find(uid);
    if (it == states_.end()) {
      PodState fresh;
      fresh.started = now;
      fresh.script = script_(pod);
      it = states_.emplace(uid, fresh).first;
    }
    state = it->second;
  }
  if (controllers::find_path(pod, "metadata/deletionTimestamp") != nullptr) {
    // Like a kubelet: SIGTERM, the runner writes its result and exits 143;
    // then the Pod object goes away.
    if (!state.finished && state.running_written) {
      json terminated = {{"exitCode", 143},
                         {"startedAt", now_text()},
                         {"finishedAt", now_text()},
                         {"reason", "Error"},
                         {"message", result(0.05, std::nullopt, "cancelled")}};
      client_
          ->merge_patch_status(kube::resources::kPods, ns_, name,
                               runner_status_patch("Failed", false, {{"terminated", terminated}}))
          .or_throw();
      state.finished = true;
      std::lock_guard lock(mutex_);
      states_[uid] = state;
      return;
    }
    kube::DeleteOptions now_please;
    now_please.grace_period_seconds = 0;
    client_->remove(kube::resources::kPods, ns_, name, now_please).or_throw();
    return;
  }
  if (state.finished) return;
  if (!state.running_written) {
    if (std::string error = secret_env_error(*client_, ns_, pod); !error.empty()) {
      json waiting = {{"reason", "CreateContainerConfigError"}, {"message", error}};
      client_
          ->merge_patch_status(kube::resources::kPods, ns_, name,
                               runner_status_patch("Pending", false, {{"waiting", waiting}}))
          .or_throw();
      return;  // like a kubelet: tried again on the next pass
    }
    json patch = runner_status_patch("Running", true, {{"running", {{"startedAt", now_text()}}}});
    patch["status"]["startTime"] = now_text();
    client_->merge_patch_status(kube::resources::kPods, ns_, name, patch).or_throw();
    state.running_written = true;
  }
  if (state.script.beat && now - state.last_beat >= kBeatInterval) {
    try {
      beat(pod);
    } catch (const std::exception&) {
      // The Lease may not exist yet.
    }
    state.last_beat = now;
  }
  if (!state.script.hang && now - state.started >= state.script.run_for) {
    json terminated = {{"exitCode", state.script.exit_code},
                       {"startedAt", now_text()},
                       {"finishedAt", now_text()},
                       {"message", state.script.termination_message},
                       {"reason", state.script.terminated_reason.empty()
                                      ? (state.script.exit_code == 0 ? "Completed" : "Error")
                                      : state.script.terminated_reason}};
    const json patch = runner_status_patch(state.script.exit_code == 0 ? "Succeeded" : "Failed",
                                           false, {{"terminated", terminated}});
    client_->merge_patch_status(kube::resources::kPods, ns_, name, patch).or_throw();
    state.finished = true;
  }
  std::lock_guard lock(mutex_);
  states_[uid] = state;
}

}  // namespace hb::testing
