#include "tools/local_kubelet/executor.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

#include "tools/local_kubelet/kube_io.h"
#include "tools/local_kubelet/pod_files.h"
#include "tools/local_kubelet/process.h"

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

bool Executor::PodRecord::running() const {
  return std::any_of(containers.begin(), containers.end(),
                     [](const ContainerRun& run) { return run.pid > 0; });
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
    if (rec.running()) {
      if (!rec.term_sent) spdlog::info("pod {}/{}: object gone; stopping it", rec.ns, rec.name);
      stop_processes(rec, now, kVanishedGrace);
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
    client_->create(binding_resource(name), ns, binding).or_throw();
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

void Executor::init_record(const Json& pod, PodRecord& rec) {
  rec.uid = str_at(pod, "/metadata/uid");
  rec.ns = str_at(pod, "/metadata/namespace");
  rec.name = str_at(pod, "/metadata/name");
  rec.pod_dir = pod_dir_for(options_.state_dir, rec.uid);
  const Json& containers = pod.value(Json::json_pointer("/spec/containers"), Json::array());
  for (const Json& c : containers.is_array() ? containers : Json::array()) {
    ContainerRun run;
    run.state.info.name = c.value("name", "");
    run.state.info.image = c.value("image", "");
    run.state.reason = "ContainerCreating";
    rec.containers.push_back(std::move(run));
  }
  const std::string phase = str_at(pod, "/status/phase");
  if (phase == "Succeeded" || phase == "Failed") {
    rec.stage = Stage::kDone;  // finished before we (re)started
  } else if (phase == "Running") {
    recover(pod, rec);
  }
}

// The Pod ran under an earlier executor whose processes died with it
// (PR_SET_PDEATHSIG): what they left in their sessions (shell-tool children)
// is swept, and each container not already terminated is marked lost.
void Executor::recover(const Json& pod, PodRecord& rec) {
  rec.start_time = str_at(pod, "/status/startTime");
  const Json statuses = pod.value(Json::json_pointer("/status/containerStatuses"), Json::array());
  const std::string prefix = "local://" + options_.node_name + "/";
  const std::string now = now_rfc3339();
  int leftovers = 0;
  for (ContainerRun& run : rec.containers) {
    Json status = Json::object();
    for (const Json& s : statuses.is_array() ? statuses : Json::array()) {
      if (s.is_object() && s.value("name", "") == run.state.info.name) status = s;
    }
    const std::string id = status.value("containerID", "");
    if (id.rfind(prefix, 0) == 0) {
      leftovers += kill_session(static_cast<pid_t>(std::atoi(id.c_str() + prefix.size())));
    }
    run.state.info.container_id = id;
    run.state.phase = ContainerPhase::kTerminated;
    const Json* terminated = status.contains("state") && status["state"].is_object() &&
                                     status["state"].contains("terminated")
                                 ? &status["state"]["terminated"]
                                 : nullptr;
    if (terminated != nullptr) {
      run.state.termination = termination_from_json(*terminated);
      continue;
    }
    const std::string started =
        status.value(Json::json_pointer("/state/running/startedAt"), rec.start_time);
    run.state.termination = {{137, std::nullopt},
                             "ContainerStatusUnknown",
                             "hb-local-kubelet restarted and lost the process",
                             started,
                             now};
  }
  spdlog::warn(
      "pod {}/{}: was Running under an earlier hb-local-kubelet; marking it failed{}", rec.ns,
      rec.name,
      leftovers > 0 ? " (killed " + std::to_string(leftovers) + " leftover processes)" : "");
  rec.stage = Stage::kExited;
  refresh_status(rec);
}

void Executor::handle(const Json& pod, Clock::time_point now) {
  auto [it, inserted] = records_.try_emplace(str_at(pod, "/metadata/uid"));
  PodRecord& rec = it->second;
  if (inserted) init_record(pod, rec);
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

// SIGTERM to every container's process group now, SIGKILL to what is left
// (sessions included) once `grace` is over; reap() records the exits.
void Executor::stop_processes(PodRecord& rec, Clock::time_point now, std::chrono::seconds grace) {
  if (!rec.term_sent) {
    for (const ContainerRun& run : rec.containers) {
      if (run.pid > 0) signal_group(run.pid, SIGTERM);
    }
    rec.term_sent = true;
    rec.kill_at = now + grace;
  } else if (now >= rec.kill_at && !rec.kill_sent) {
    spdlog::info("pod {}/{}: grace period over; SIGKILL", rec.ns, rec.name);
    for (const ContainerRun& run : rec.containers) {
      if (run.pid <= 0) continue;
      signal_group(run.pid, SIGKILL);
      kill_session(run.pid);
    }
    rec.kill_sent = true;
  }
}

void Executor::handle_deletion(const Json& pod, PodRecord& rec, Clock::time_point now) {
  if (rec.running()) {
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
      spdlog::info("pod {}/{}: deleted; SIGTERM to its containers, SIGKILL after {} s", rec.ns,
                   rec.name, grace);
      stop_processes(rec, now, std::chrono::seconds(grace));
    } else {
      stop_processes(rec, now, {});
    }
    return;  // reap() records the exits; the next pass finishes the deletion
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
    client_->remove(kube::resources::kPods, rec.ns, rec.name, options).or_throw();
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

void Executor::refresh_status(PodRecord& rec) {
  std::vector<ContainerState> states;
  for (const ContainerRun& run : rec.containers) states.push_back(run.state);
  rec.status_patch = status_patch(states, rec.start_time, now_rfc3339());
  rec.next_write = {};
}

// Every container not yet ended ends with `reason` (the Pod cannot run).
void Executor::finish_without_running(PodRecord& rec, const std::string& reason,
                                      const std::string& message) {
  const std::string stamp = now_rfc3339();
  for (ContainerRun& run : rec.containers) {
    if (run.state.phase == ContainerPhase::kTerminated) continue;
    run.state.phase = ContainerPhase::kTerminated;
    run.state.termination = {{128, std::nullopt}, reason, message, stamp, stamp};
  }
  rec.stage = Stage::kExited;
  refresh_status(rec);
  spdlog::warn("pod {}/{}: failed: {}: {}", rec.ns, rec.name, reason, message);
}

// The container the problem is about waits with its reason, the others
// with ContainerCreating; the status is written when that changes.
void Executor::set_waiting(PodRecord& rec, const PlanProblem& problem, Clock::time_point now) {
  rec.next_attempt = now + (problem.reason == "ErrImagePull" ? kImagePullRetry : kWaitingRetry);
  const std::string key = problem.container + "\n" + problem.reason + "\n" + problem.message;
  if (key == rec.last_waiting) return;
  rec.last_waiting = key;
  spdlog::warn("pod {}/{}: waiting{}: {}: {}", rec.ns, rec.name,
               problem.container.empty() ? "" : " (container " + problem.container + ")",
               problem.reason, problem.message);
  for (ContainerRun& run : rec.containers) {
    const bool about = problem.container.empty() || problem.container == run.state.info.name;
    run.state.phase = ContainerPhase::kWaiting;
    run.state.reason = about ? problem.reason : "ContainerCreating";
    run.state.message = about ? problem.message : "";
  }
  refresh_status(rec);
}

// The launch plan, or nullopt when it is to be tried again later.
std::optional<PlanResult> Executor::plan(const Json& pod, PodRecord& rec, Clock::time_point now) {
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
  inputs.executable = is_executable_file;
  const kube::ClusterConfig& config = client_->config();
  inputs.cluster_ca_pem = config.tls.ca_pem;
  for (const auto& name : options_.pass_env) {
    if (const char* value = std::getenv(name.c_str())) inputs.pass_env.emplace_back(name, value);
  }
  try {
    if (std::string account = wants_service_account(pod); !account.empty()) {
      auto token = service_account_token(*client_, rec.ns, account);
      if (!token) {
        return PlanProblem{false, "", "ContainerCreating",
                           "waiting for the token Secret of service account \"" + account + "\""};
      }
      inputs.service_account_token = *token;
      inputs.service_account_kubeconfig = render_token_kubeconfig(
          config.server, config.tls.ca_pem, config.tls.insecure_skip_verify, *token, rec.ns);
    }
    return plan_launch(pod, inputs);
  } catch (const std::exception& error) {
    spdlog::warn("pod {}/{}: preparing: {} (retrying)", rec.ns, rec.name, error.what());
    rec.next_attempt = now + kWaitingRetry;
    return std::nullopt;
  }
}

void Executor::try_start(const Json& pod, PodRecord& rec, Clock::time_point now) {
  std::optional<PlanResult> result = plan(pod, rec, now);
  if (!result) return;
  if (auto* problem = std::get_if<PlanProblem>(&*result)) {
    if (problem->fatal) {
      finish_without_running(rec, problem->reason, problem->message);
    } else {
      set_waiting(rec, *problem, now);
    }
    return;
  }
  LocalLaunch& launch = std::get<LocalLaunch>(*result);
  for (const auto& note : launch.notes) {
    spdlog::info("pod {}/{}: note: {}", rec.ns, rec.name, note);
  }
  try {
    materialize(launch);
  } catch (const std::exception& error) {
    set_waiting(rec, {false, "", "ContainerCreating", error.what()}, now);
    return;
  }
  for (ContainerLaunch& container : launch.containers) {
    for (ContainerRun& run : rec.containers) {
      if (run.state.info.name == container.name) run.launch = std::move(container);
    }
  }
  start_containers(rec);
}

// Starts every container; one that cannot start is terminated with
// StartError while the others run.
void Executor::start_containers(PodRecord& rec) {
  rec.start_time = now_rfc3339();
  for (ContainerRun& run : rec.containers) {
    const ContainerLaunch& l = run.launch;
    Spawned child = spawn(spawn_spec_for(l));
    if (child.pid < 0) {
      run.state.phase = ContainerPhase::kTerminated;
      run.state.termination = {
          {128, std::nullopt}, "StartError", child.error, rec.start_time, rec.start_time};
      spdlog::warn("pod {}/{}: container {} failed to start: {}", rec.ns, rec.name, l.name,
                   child.error);
      continue;
    }
    run.pid = child.pid;
    run.state.info.container_id = "local://" + options_.node_name + "/" + std::to_string(child.pid);
    run.state.phase = ContainerPhase::kRunning;
    run.state.started_at = rec.start_time;
    // Only the program: arguments may carry expanded $(VAR)s from Secrets.
    spdlog::info("pod {}/{}: container {} started pid {}{}: {} with {} arguments (log {})", rec.ns,
                 rec.name, l.name, child.pid,
                 l.run_as.uid ? " as uid " + std::to_string(*l.run_as.uid) : "", l.argv[0],
                 l.argv.size() - 1, l.log_path);
  }
  rec.stage = rec.running() ? Stage::kRunning : Stage::kExited;
  refresh_status(rec);
}

// Records a container's exit; returns whether it ended.
bool Executor::reap_container(const PodRecord& rec, ContainerRun& run, bool block) {
  std::optional<int> status;
  if (block) {
    int raw = 0;
    if (::waitpid(run.pid, &raw, 0) == run.pid) status = raw;
  } else {
    status = try_wait(run.pid);
  }
  if (!status) return false;
  const int leftovers = kill_session(run.pid);  // grandchildren that outlived it
  const ExitStatus exit = exit_from_wait_status(*status);
  const ContainerLaunch& l = run.launch;
  const std::string file = read_head(l.termination_path, kTerminationMessageBytesMax + 1);
  const std::string log = file.empty() ? read_tail(l.log_path, kFallbackLogBytesMax) : "";
  run.state.phase = ContainerPhase::kTerminated;
  run.state.termination = {exit, "",
                           termination_message(file, log, exit.exit_code, l.termination_policy),
                           run.state.started_at, now_rfc3339()};
  spdlog::info(
      "pod {}/{}: container {} (pid {}) exited with code {}{}{}", rec.ns, rec.name, l.name, run.pid,
      exit.exit_code, exit.signal ? " (signal " + std::to_string(*exit.signal) + ")" : "",
      leftovers > 0 ? ", killed " + std::to_string(leftovers) + " leftover processes" : "");
  run.pid = -1;
  return true;
}

void Executor::reap(PodRecord& rec, bool block) {
  bool changed = false;
  for (ContainerRun& run : rec.containers) {
    if (run.pid > 0 && reap_container(rec, run, block)) changed = true;
  }
  if (!changed) return;
  if (!rec.running()) rec.stage = Stage::kExited;
  refresh_status(rec);
}

void Executor::write_status(PodRecord& rec, Clock::time_point now) {
  if (!rec.status_patch || now < rec.next_write) return;
  try {
    client_->merge_patch_status(kube::resources::kPods, rec.ns, rec.name, *rec.status_patch)
        .or_throw();
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
    for (const ContainerRun& run : rec.containers) {
      if (run.pid <= 0) continue;
      signal_group(run.pid, SIGTERM);
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
                       [](const auto& entry) { return entry.second.running(); });
  };
  while (any_running() && Clock::now() < deadline) {
    for (auto& [uid, rec] : records_) reap(rec, false);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& [uid, rec] : records_) {
    for (const ContainerRun& run : rec.containers) {
      if (run.pid <= 0) continue;
      signal_group(run.pid, SIGKILL);
      kill_session(run.pid);
    }
    reap(rec, true);
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
