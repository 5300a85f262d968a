#include "tests/e2e/local_kubelet/executor.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

#include "tests/e2e/local_kubelet/kube_io.h"
#include "tests/e2e/local_kubelet/pod_files.h"
#include "tests/e2e/local_kubelet/process.h"

namespace hb::local_kubelet {
namespace {

std::string str_at(const Json& object, const char* pointer) {
  return object.value(Json::json_pointer(pointer), std::string());
}

bool has(const Json& object, const char* pointer) {
  return object.contains(Json::json_pointer(pointer)) &&
         !object.at(Json::json_pointer(pointer)).is_null();
}

std::string pod_key(const Json& pod) {
  return str_at(pod, "/metadata/namespace") + "/" + str_at(pod, "/metadata/name");
}

kube::Resource binding_resource(const std::string& pod_name) {
  return {"", "v1", "pods/" + pod_name + "/binding"};
}

bool is_not_found(const kube::ApiError& error) {
  return error.kind() == kube::ErrorKind::kNotFound;
}

}  // namespace

Executor::Executor(std::shared_ptr<kube::Client> client, Options options)
    : client_(std::move(client)),
      options_(std::move(options)),
      node_(client_, NodeAgent::local_facts(options_.node_name, options_.max_pods)) {
  kube::InformerOptions informer_options;
  informer_options.namespace_ = options_.namespace_;
  pods_ = std::make_unique<kube::Informer>(client_, kube::resources::kPods, informer_options);
  kube::StoreHandlers handlers;
  handlers.on_change = [this](const std::string&) {
    std::lock_guard lock(wake_mutex_);
    changed_ = true;
    wake_.notify_one();
  };
  pods_->set_handlers(std::move(handlers));
}

Executor::~Executor() {
  if (pods_) pods_->stop();
}

void Executor::stop() {
  stopping_ = true;
  std::lock_guard lock(wake_mutex_);
  wake_.notify_one();
}

void Executor::run() {
  spdlog::info("hb-local-kubelet: node {}, namespace {}, images {}, state {}, max {} pods",
               options_.node_name, options_.namespace_.empty() ? "(all)" : options_.namespace_,
               options_.images.describe(), options_.state_dir, options_.max_pods);
  pods_->start();
  while (!stopping_) {
    node_.tick(Clock::now());
    if (pods_->has_synced()) tick();
    std::unique_lock lock(wake_mutex_);
    wake_.wait_for(lock, kTickInterval, [this] { return changed_ || stopping_.load(); });
    changed_ = false;
  }
  shutdown();
}

int Executor::active_pods() const {
  return static_cast<int>(std::count_if(records_.begin(), records_.end(), [](const auto& entry) {
    return entry.second.stage != Stage::kDone;
  }));
}

void Executor::tick() {
  const auto now = Clock::now();
  for (auto& [uid, rec] : records_) reap(rec, false);

  std::vector<Json> unbound;
  std::map<std::string, bool> seen;
  for (Json& pod : pods_->store().list()) {
    const std::string node = str_at(pod, "/spec/nodeName");
    if (node.empty()) {
      if (!has(pod, "/metadata/deletionTimestamp")) unbound.push_back(std::move(pod));
      continue;
    }
    if (node != options_.node_name) continue;
    seen[str_at(pod, "/metadata/uid")] = true;
    try {
      handle(pod, now);
    } catch (const std::exception& error) {
      spdlog::warn("pod {}: {}", pod_key(pod), error.what());
    }
  }

  // Oldest first, as far as --max-pods allows.
  std::sort(unbound.begin(), unbound.end(), [](const Json& a, const Json& b) {
    return str_at(a, "/metadata/creationTimestamp") < str_at(b, "/metadata/creationTimestamp");
  });
  int free_slots = options_.max_pods - active_pods();
  for (const Json& pod : unbound) {
    if (free_slots <= 0) break;
    bind(pod);
    --free_slots;
  }

  // Pod objects that vanished (forced deletion): stop their processes, forget them.
  for (auto it = records_.begin(); it != records_.end();) {
    PodRecord& rec = it->second;
    if (seen.count(it->first) != 0) {
      ++it;
      continue;
    }
    if (rec.pid > 0) {
      if (!rec.term_sent) {
        spdlog::info("pod {}/{}: object gone; stopping pid {}", rec.ns, rec.name, rec.pid);
        signal_group(rec.pid, SIGTERM);
        rec.term_sent = true;
        rec.kill_at = now + kVanishedGrace;
      } else if (now >= rec.kill_at && !rec.kill_sent) {
        signal_group(rec.pid, SIGKILL);
        kill_session(rec.pid);
        rec.kill_sent = true;
      }
      ++it;
      continue;
    }
    remove_secrets(rec.pod_dir);
    it = records_.erase(it);
  }
}

void Executor::bind(const Json& pod) {
  const std::string ns = str_at(pod, "/metadata/namespace"), name = str_at(pod, "/metadata/name");
  Json binding = {
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata", {{"name", name}, {"uid", str_at(pod, "/metadata/uid")}}},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", options_.node_name}}}};
  try {
    client_->create(binding_resource(name), ns, binding);
    spdlog::info("pod {}/{}: bound to node {}", ns, name, options_.node_name);
  } catch (const kube::ApiError& error) {
    // Conflict: bound meanwhile (by us or another); NotFound: deleted.
    if (error.kind() != kube::ErrorKind::kConflict && !is_not_found(error)) {
      spdlog::warn("pod {}/{}: bind: {}", ns, name, error.what());
    }
  } catch (const std::exception& error) {
    spdlog::warn("pod {}/{}: bind: {}", ns, name, error.what());
  }
}

void Executor::handle(const Json& pod, Clock::time_point now) {
  const std::string uid = str_at(pod, "/metadata/uid");
  auto [it, inserted] = records_.try_emplace(uid);
  PodRecord& rec = it->second;
  if (inserted) {
    rec.uid = uid;
    rec.ns = str_at(pod, "/metadata/namespace");
    rec.name = str_at(pod, "/metadata/name");
    rec.pod_dir = pod_dir_for(options_.state_dir, rec.ns, rec.name, uid);
    const Json& containers = pod.value(Json::json_pointer("/spec/containers"), Json::array());
    if (!containers.empty()) {
      rec.container.name = containers[0].value("name", "");
      rec.container.image = containers[0].value("image", "");
    }
    const std::string phase = str_at(pod, "/status/phase");
    if (phase == "Succeeded" || phase == "Failed") {
      rec.stage = Stage::kDone;  // finished before we (re)started
    } else if (phase == "Running") {
      // Ran under an earlier executor whose process is gone.
      rec.started_at = str_at(pod, "/status/startTime");
      rec.stage = Stage::kExited;
      // Its process died with that executor (PR_SET_PDEATHSIG); what it left
      // in its session (shell-tool children) is swept here.
      const std::string id = str_at(pod, "/status/containerStatuses/0/containerID");
      const std::string prefix = "local://" + options_.node_name + "/";
      int leftovers = 0;
      if (id.rfind(prefix, 0) == 0) {
        leftovers = kill_session(static_cast<pid_t>(std::atoi(id.c_str() + prefix.size())));
      }
      spdlog::warn(
          "pod {}/{}: was Running under an earlier hb-local-kubelet; marking it failed{}", rec.ns,
          rec.name,
          leftovers > 0 ? " (killed " + std::to_string(leftovers) + " leftover processes)" : "");
      rec.status_patch = terminated_patch(rec.container,
                                          {{137, std::nullopt},
                                           "ContainerStatusUnknown",
                                           "hb-local-kubelet restarted and lost the process",
                                           rec.started_at,
                                           now_rfc3339()},
                                          now_rfc3339());
    }
  }
  if (has(pod, "/metadata/deletionTimestamp")) {
    handle_deletion(pod, rec, now);
    return;
  }
  switch (rec.stage) {
    case Stage::kPending:
      if (now >= rec.next_attempt) try_start(pod, rec, now);
      break;
    case Stage::kRunning:
    case Stage::kExited:
      break;
    case Stage::kDone:
      return;
  }
  write_status(rec, now);
  if (rec.stage == Stage::kExited && !rec.status_patch) {
    rec.stage = Stage::kDone;
    remove_secrets(rec.pod_dir);
  }
}

void Executor::handle_deletion(const Json& pod, PodRecord& rec, Clock::time_point now) {
  if (rec.pid > 0) {
    if (!rec.term_sent) {
      int grace = kTerminationGraceSecondsDefault;
      if (auto g = pod.value(Json::json_pointer("/metadata/deletionGracePeriodSeconds"), -1);
          g >= 0) {
        grace = g;
      } else if (auto t = pod.value(Json::json_pointer("/spec/terminationGracePeriodSeconds"), -1);
                 t >= 0) {
        grace = t;
      }
      grace = std::max(grace, kTerminationGraceSecondsMin);
      spdlog::info("pod {}/{}: deleted; SIGTERM to pid {}, SIGKILL after {} s", rec.ns, rec.name,
                   rec.pid, grace);
      signal_group(rec.pid, SIGTERM);
      rec.term_sent = true;
      rec.kill_at = now + std::chrono::seconds(grace);
    } else if (now >= rec.kill_at && !rec.kill_sent) {
      spdlog::info("pod {}/{}: grace period over; SIGKILL to pid {}", rec.ns, rec.name, rec.pid);
      signal_group(rec.pid, SIGKILL);
      kill_session(rec.pid);
      rec.kill_sent = true;
    }
    return;  // reap() records the exit; the next pass finishes the deletion
  }
  if (rec.status_patch) {
    write_status(rec, now);
    if (rec.status_patch) return;  // retried on the next pass
  }
  if (now < rec.next_attempt) return;
  kube::DeleteOptions options;
  options.grace_period_seconds = 0;
  options.precondition_uid = rec.uid;
  try {
    client_->remove(kube::resources::kPods, rec.ns, rec.name, options);
    spdlog::info("pod {}/{}: deletion finished", rec.ns, rec.name);
  } catch (const kube::ApiError& error) {
    if (!is_not_found(error) && error.kind() != kube::ErrorKind::kConflict) {
      spdlog::warn("pod {}/{}: delete: {}", rec.ns, rec.name, error.what());
      rec.next_attempt = now + kWriteRetry;
      return;
    }
  }
  rec.stage = Stage::kDone;
  rec.next_attempt = now + kWaitingRetry;  // the object should vanish meanwhile
  remove_secrets(rec.pod_dir);
}

void Executor::finish_without_running(PodRecord& rec, const std::string& reason,
                                      const std::string& message) {
  const std::string stamp = now_rfc3339();
  rec.status_patch = terminated_patch(rec.container,
                                      {{128, std::nullopt},
                                       reason,
                                       message,
                                       rec.started_at.empty() ? stamp : rec.started_at,
                                       stamp},
                                      stamp);
  rec.stage = Stage::kExited;
  spdlog::warn("pod {}/{}: failed: {}: {}", rec.ns, rec.name, reason, message);
}

void Executor::try_start(const Json& pod, PodRecord& rec, Clock::time_point now) {
  PlanInputs inputs;
  inputs.pod_dir = rec.pod_dir;
  inputs.images = &options_.images;
  inputs.node_name = options_.node_name;
  inputs.config_map = [&](const std::string& name) {
    return get_if_exists(*client_, kube::resources::kConfigMaps, rec.ns, name);
  };
  inputs.secret = [&](const std::string& name) {
    return get_if_exists(*client_, kube::resources::kSecrets, rec.ns, name);
  };
  for (const auto& name : options_.pass_env) {
    if (const char* value = std::getenv(name.c_str())) inputs.pass_env.emplace_back(name, value);
  }
  auto wait = [&](const std::string& reason, const std::string& message,
                  std::chrono::seconds retry) {
    rec.next_attempt = now + retry;
    if (reason + message == rec.last_waiting) return;
    rec.last_waiting = reason + message;
    spdlog::warn("pod {}/{}: waiting: {}: {}", rec.ns, rec.name, reason, message);
    rec.status_patch = waiting_patch(rec.container, reason, message, now_rfc3339());
  };

  PlanResult plan;
  try {
    if (std::string account = wants_service_account(pod); !account.empty()) {
      auto token = service_account_token(*client_, rec.ns, account);
      if (!token) {
        wait("ContainerCreating",
             "waiting for the token Secret of service account \"" + account + "\"", kWaitingRetry);
        return;
      }
      const kube::ClusterConfig& config = client_->config();
      inputs.service_account_token = *token;
      inputs.service_account_kubeconfig = render_token_kubeconfig(
          config.server, config.tls.ca_pem, config.tls.insecure_skip_verify, *token, rec.ns);
    }
    plan = plan_launch(pod, inputs);
  } catch (const std::exception& error) {
    spdlog::warn("pod {}/{}: preparing: {} (retrying)", rec.ns, rec.name, error.what());
    rec.next_attempt = now + kWaitingRetry;
    return;
  }
  if (auto* problem = std::get_if<PlanProblem>(&plan)) {
    if (problem->fatal) {
      finish_without_running(rec, problem->reason, problem->message);
    } else {
      wait(problem->reason, problem->message,
           problem->reason == "ErrImagePull" ? kImagePullRetry : kWaitingRetry);
    }
    return;
  }
  rec.launch = std::move(std::get<LocalLaunch>(plan));
  for (const auto& note : rec.launch.notes) {
    spdlog::info("pod {}/{}: note: {}", rec.ns, rec.name, note);
  }
  try {
    materialize(rec.pod_dir, rec.launch);
  } catch (const std::exception& error) {
    wait("ContainerCreating", error.what(), kWaitingRetry);
    return;
  }
  rec.started_at = now_rfc3339();
  Spawned child =
      spawn({rec.launch.argv, rec.launch.env, rec.launch.working_dir, rec.launch.log_path});
  if (child.pid < 0) {
    finish_without_running(rec, "StartError", child.error);
    return;
  }
  rec.pid = child.pid;
  rec.container.container_id = "local://" + options_.node_name + "/" + std::to_string(child.pid);
  rec.stage = Stage::kRunning;
  rec.status_patch = running_patch(rec.container, rec.started_at, rec.started_at);
  // Only the program: arguments may carry expanded $(VAR)s from Secrets.
  spdlog::info("pod {}/{}: started pid {}: {} with {} arguments (log {})", rec.ns, rec.name,
               child.pid, rec.launch.argv[0], rec.launch.argv.size() - 1, rec.launch.log_path);
}

void Executor::reap(PodRecord& rec, bool block) {
  if (rec.pid <= 0) return;
  std::optional<int> status;
  if (block) {
    int raw = 0;
    if (::waitpid(rec.pid, &raw, 0) == rec.pid) status = raw;
  } else {
    status = try_wait(rec.pid);
  }
  if (!status) return;
  const int leftovers = kill_session(rec.pid);  // grandchildren that outlived it
  const ExitStatus exit = exit_from_wait_status(*status);
  const std::string finished = now_rfc3339();
  const std::string file = read_head(rec.launch.termination_path, kTerminationMessageBytesMax + 1);
  const std::string log = file.empty() ? read_tail(rec.launch.log_path, kFallbackLogBytesMax) : "";
  Termination t;
  t.exit = exit;
  t.message = termination_message(file, log, exit.exit_code, rec.launch.termination_policy);
  t.started_at = rec.started_at;
  t.finished_at = finished;
  rec.status_patch = terminated_patch(rec.container, t, finished);
  rec.next_write = {};
  spdlog::info(
      "pod {}/{}: pid {} exited with code {}{}{}", rec.ns, rec.name, rec.pid, exit.exit_code,
      exit.signal ? " (signal " + std::to_string(*exit.signal) + ")" : "",
      leftovers > 0 ? ", killed " + std::to_string(leftovers) + " leftover processes" : "");
  rec.pid = -1;
  rec.stage = Stage::kExited;
}

void Executor::write_status(PodRecord& rec, Clock::time_point now) {
  if (!rec.status_patch || now < rec.next_write) return;
  try {
    client_->merge_patch_status(kube::resources::kPods, rec.ns, rec.name, *rec.status_patch);
    rec.status_patch.reset();
  } catch (const kube::ApiError& error) {
    if (is_not_found(error)) {
      rec.status_patch.reset();
      return;
    }
    spdlog::warn("pod {}/{}: status: {}", rec.ns, rec.name, error.what());
    rec.next_write = now + kWriteRetry;
  } catch (const std::exception& error) {
    spdlog::warn("pod {}/{}: status: {}", rec.ns, rec.name, error.what());
    rec.next_write = now + kWriteRetry;
  }
}

void Executor::shutdown() {
  int running = 0;
  for (auto& [uid, rec] : records_) {
    if (rec.pid > 0) {
      signal_group(rec.pid, SIGTERM);
      ++running;
    }
  }
  if (running > 0) {
    spdlog::info("stopping: SIGTERM to {} processes, SIGKILL after {} s", running,
                 kShutdownGrace.count());
  }
  const auto deadline = Clock::now() + kShutdownGrace;
  auto any_running = [&] {
    return std::any_of(records_.begin(), records_.end(),
                       [](const auto& entry) { return entry.second.pid > 0; });
  };
  while (any_running() && Clock::now() < deadline) {
    for (auto& [uid, rec] : records_) reap(rec, false);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& [uid, rec] : records_) {
    if (rec.pid > 0) {
      signal_group(rec.pid, SIGKILL);
      kill_session(rec.pid);
      reap(rec, true);
    }
  }
  // Say how they ended, so their Jobs do not wait for a kubelet that is gone.
  for (auto& [uid, rec] : records_) {
    if (rec.status_patch && rec.stage != Stage::kPending) write_status(rec, Clock::time_point{});
    if (rec.stage != Stage::kPending) remove_secrets(rec.pod_dir);
  }
  pods_->stop();
  node_.shutdown(options_.delete_node_on_exit);
  spdlog::info("hb-local-kubelet stopped");
}

}  // namespace hb::local_kubelet
