// hb-local-kubelet: plays the kubelet on a control plane without nodes by
// running each of a Pod's containers as a local process. For the demo and the e2e
// tests; see launch_plan.h for what a local process cannot do like a container.
//
//   hb-local-kubelet --image=heartbeat-runner=/abs/build/runner/heartbeat-runner
//       [--kubeconfig=PATH] [--namespace=NS] [--node-name=NAME] [--state-dir=DIR] [--max-pods=N]
//
// SIGTERM or SIGINT: stop every process (TERM, 5 s, KILL), write their
// status, mark the node not ready, exit 0.
#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "tools/local_kubelet/executor.h"
#include "tools/local_kubelet/options.h"

namespace {
constexpr int kExitUsage = 2;
constexpr int kExitConfig = 78;
constexpr mode_t kSearchableByOthers = S_IXOTH;

// Containers with a runAsUser reach their files below the state dir only if
// every directory above it lets other users pass: the state dir is ours to
// fix, the rest is only reported.
void check_state_dir_reachable(const std::filesystem::path& state_dir) {
  struct stat st {};
  if (::stat(state_dir.c_str(), &st) == 0 && (st.st_mode & kSearchableByOthers) == 0) {
    ::chmod(state_dir.c_str(), (st.st_mode & 07777) | S_IXUSR | S_IXGRP | S_IXOTH);
  }
  for (auto dir = state_dir.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (::stat(dir.c_str(), &st) == 0 && (st.st_mode & kSearchableByOthers) == 0) {
      spdlog::warn(
          "--state-dir: {} is not searchable by other users; containers with a runAsUser will "
          "fail to start (chmod o+x it, or choose another --state-dir)",
          dir.string());
    }
    if (dir == dir.root_path()) break;
  }
}
}  // namespace

int main(int argc, char** argv) {
  auto logger = std::make_shared<spdlog::logger>("hb-local-kubelet",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);

  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = hb::local_kubelet::parse_options(args, hb::kube::process_env);
  if (!parsed.options) {
    std::cerr << "hb-local-kubelet: " << parsed.error << "\n" << hb::local_kubelet::usage_text();
    return kExitUsage;
  }
  hb::local_kubelet::Options options = *parsed.options;
  if (options.help) {
    std::cout << hb::local_kubelet::usage_text();
    return 0;
  }
  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  if (ec) {
    std::cerr << "hb-local-kubelet: --state-dir: cannot create " << options.state_dir << ": "
              << ec.message() << "\n";
    return kExitConfig;
  }
  options.state_dir = std::filesystem::absolute(options.state_dir).lexically_normal().string();
  check_state_dir_reachable(options.state_dir);

  hb::kube::Result<hb::kube::ClusterConfig> cluster =
      hb::kube::load_kubeconfig_file(options.kubeconfig);
  if (!cluster.ok()) {
    std::cerr << "hb-local-kubelet: --kubeconfig: " << cluster.error().describe() << "\n";
    return kExitConfig;
  }
  hb::kube::ClientOptions client_options;
  client_options.user_agent = "hb-local-kubelet";
  auto client = std::make_shared<hb::kube::Client>(std::move(cluster).value(), client_options);

  // Only main receives the stop signals; no other thread (nor child) is interrupted.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  hb::local_kubelet::Executor executor(client, options);
  std::thread worker([&] { executor.run(); });
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  spdlog::info("signal {}: stopping", signal_number);
  executor.stop();
  worker.join();
  return 0;
}
