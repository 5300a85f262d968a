// heartbeat-runner: performs one heartbeat of an agent inside its Job.
//
//   heartbeat-runner [--context PATH] [--termination-log PATH] [--ca-file PATH]
//
// Flags fall back to HEARTBEAT_CONTEXT_PATH, HEARTBEAT_TERMINATION_PATH and
// HEARTBEAT_CA_FILE; the API key comes from HEARTBEAT_API_KEY only. The
// transcript goes to stdout as JSON lines, logs to stderr, the result to the
// termination path. Exit codes: docs/runner.md.
#include <fcntl.h>
#include <signal.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "api/env_names.h"
#include "api/exit_codes.h"
#include "api/heartbeat_pod.h"
#include "api/trace_context.h"
#include "http/http.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/log_format.h"
#include "runner/env_scrub.h"
#include "runner/kube_adapters.h"
#include "runner/log_tail.h"
#include "runner/otel_trace.h"
#include "runner/runner_app.h"

namespace {

using namespace hb;

constexpr const char* kContextPathDefault = "/etc/heartbeat/context.json";

std::atomic<bool> g_terminate{false};

// Written to by the signal handler (write(2) is async-signal-safe) and by main
// when the heartbeat is over, so the watcher thread sleeps in read(2) and
// wakes at once for either.
int g_wake_pipe[2] = {-1, -1};

void on_sigterm(int) {
  g_terminate = true;
  const int saved_errno = errno;
  [[maybe_unused]] ssize_t n = ::write(g_wake_pipe[1], "t", 1);
  errno = saved_errno;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::string(value) : fallback;
}

void usage() {
  std::cerr
      << "usage: heartbeat-runner [--context PATH] [--termination-log PATH] [--ca-file PATH]\n"
         "  env: HEARTBEAT_API_KEY (secret), HEARTBEAT_CONTEXT_PATH, HEARTBEAT_TERMINATION_PATH,\n"
         "       HEARTBEAT_CA_FILE, HEARTBEAT_KUBECONFIG (outside a cluster),\n"
         "       HEARTBEAT_TOOLS_SOCKET (the tools container's server; the shell tool runs "
         "there),\n"
         "       HEARTBEAT_TOOLS_LOCAL=1 (no tools container: run commands here; development "
         "only)\n"
         "       OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,\n"
         "       OTEL_EXPORTER_OTLP_HEADERS (secret), OTEL_SERVICE_NAME, "
         "OTEL_RESOURCE_ATTRIBUTES,\n"
         "       OTEL_SDK_DISABLED, TRACEPARENT, OTEL_SEMCONV_STABILITY_OPT_IN (the heartbeat's "
         "trace over OTLP/HTTP JSON)\n";
}

// In a pod: the service account; elsewhere HEARTBEAT_KUBECONFIG; else none.
std::unique_ptr<kube::Client> make_kube_client(const std::shared_ptr<spdlog::logger>& logger) {
  const bool in_cluster = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  const std::string path = env_or("HEARTBEAT_KUBECONFIG", "");
  if (!in_cluster && path.empty()) return nullptr;
  kube::Result<kube::ClusterConfig> cluster =
      in_cluster ? kube::load_in_cluster() : kube::load_kubeconfig_file(path);
  if (!cluster.ok()) {
    logger->warn("no Kubernetes access, running without Lease renewal and memory saving: {}",
                 cluster.error().describe());
    return nullptr;
  }
  kube::ClientOptions options;
  options.user_agent = "heartbeat-runner";
  return std::make_unique<kube::Client>(std::move(cluster).value(), options);
}

// The OTLP headers may hold a collector's token: taken out of the
// environment like the API key, so the shell tool never passes them on.
std::optional<otlp::ExporterConfig> trace_config_from_env() {
  std::optional<std::string> headers = runner::take_secret_env("OTEL_EXPORTER_OTLP_HEADERS");
  std::optional<std::string> trace_headers =
      runner::take_secret_env("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
  return otlp::config_from_env(
      [&](const char* name) -> std::optional<std::string> {
        if (std::string_view(name) == "OTEL_EXPORTER_OTLP_HEADERS") return headers;
        if (std::string_view(name) == "OTEL_EXPORTER_OTLP_TRACES_HEADERS") return trace_headers;
        const char* value = std::getenv(name);
        return value ? std::optional<std::string>(value) : std::nullopt;
      },
      runner::otel::kServiceNameDefault);
}

// Copies each formatted log line into a LogTail.
class TailSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit TailSink(std::shared_ptr<runner::LogTail> tail) : tail_(std::move(tail)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(message, formatted);
    tail_->append(std::string_view(formatted.data(), formatted.size()));
  }
  void flush_() override {}

 private:
  std::shared_ptr<runner::LogTail> tail_;
};

// stderr, and its last characters (in `tail`) for the result's stderrExcerpt.
std::shared_ptr<spdlog::logger> make_logger(const std::shared_ptr<runner::LogTail>& tail) {
  auto logger = std::make_shared<spdlog::logger>(
      "runner", spdlog::sinks_init_list{std::make_shared<spdlog::sinks::stderr_sink_mt>(),
                                        std::make_shared<TailSink>(tail)});
  // Control bytes escaped: a model-chosen tool name in a log line cannot
  // forge another line (the log tail may become the termination message).
  logger->set_formatter(kube::escaped_formatter("%Y-%m-%dT%H:%M:%S.%eZ %l %*", false));
  spdlog::set_default_logger(logger);
  return logger;
}

// What the command line asks for: run, or exit at once with this code.
struct CommandLine {
  std::optional<int> exit_code;
  std::string ca_file;
};

// The flags override the environment's paths; --help and an unknown flag end the process.
CommandLine read_command_line(int argc, char** argv, runner::AppOptions& options,
                              spdlog::logger& logger) {
  CommandLine line{std::nullopt, env_or("HEARTBEAT_CA_FILE", "")};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) == 0) return arg.substr(prefix.size());
      if (arg == flag && i + 1 < argc) return std::string(argv[++i]);
      return std::nullopt;
    };
    if (auto v = value("--context")) {
      options.context_path = *v;
    } else if (auto v2 = value("--termination-log")) {
      options.termination_path = *v2;
    } else if (auto v3 = value("--ca-file")) {
      line.ca_file = *v3;
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return {0, ""};
    } else {
      usage();
      logger.error("unknown argument {}", arg);
      return {api::kExitConfigError, ""};
    }
  }
  return line;
}

// The key stays in this process's heap only: scrubbed from the environment
// block /proc/PID/environ shows, and the process is not dumpable (main's
// first line), so no other process of the user can read its memory.
std::string take_api_key() {
  std::string key = runner::take_secret_env(api::kEnvApiKey).value_or("");
  // A Secret made with `echo key | kubectl create secret --from-file` ends
  // in a newline, which no header may carry (the HTTP layer refuses it).
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
  return key;
}

void read_environment(runner::AppOptions& options, spdlog::logger& logger) {
  options.context_path = env_or(api::kEnvContextPath, kContextPathDefault);
  options.termination_path = env_or(api::kEnvTerminationPath, api::kTerminationPath);
  options.api_key = take_api_key();
  options.otel = trace_config_from_env();
  if (options.otel) {
    for (const std::string& warning : options.otel->warnings) logger.warn("{}", warning);
  }
  options.traceparent = env_or(api::kEnvTraceParent, "");
  options.tools_socket = env_or(api::kEnvToolsSocket, "");
  options.tools_local = options.tools_socket.empty() && env_or("HEARTBEAT_TOOLS_LOCAL", "") == "1";
}

// SIGTERM and SIGINT wake the watcher through a pipe; SIGPIPE is ignored (a
// connection closed under a write is an error value, not the end of the process).
bool install_signal_handlers() {
  if (::pipe2(g_wake_pipe, O_CLOEXEC) != 0) return false;
  struct sigaction action {};
  action.sa_handler = on_sigterm;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}

runner::AppDeps make_deps(runner::Clock& clock, http::Client& http, kube::Client* kube_client,
                          const std::shared_ptr<spdlog::logger>& logger,
                          const std::shared_ptr<runner::LogTail>& stderr_tail) {
  return runner::AppDeps{
      clock,
      std::cout,
      http,
      [kube_client](const api::ContextDocument& doc) -> std::unique_ptr<runner::LeaseRenewer> {
        if (!kube_client || !doc.lease) return nullptr;
        return std::make_unique<runner::KubeLeaseRenewer>(
            *kube_client, doc.agent_namespace, doc.lease->name, doc.run.name, doc.agent_name);
      },
      [kube_client](const api::ContextDocument& doc) -> std::unique_ptr<runner::MemoryStore> {
        if (!kube_client) return nullptr;
        return std::make_unique<runner::KubeMemoryStore>(*kube_client, doc.agent_namespace,
                                                         doc.memory_config_map, doc.agent_name);
      },
      [] { return g_terminate.load(); },
      [logger](const std::string& message) { logger->info("{}", message); },
      [logger](const std::string& message) { logger->warn("{}", message); },
      std::make_shared<http::CancelSource>(),
      [stderr_tail] { return stderr_tail->text(); },
  };
}

// A signal handler may only set a flag and write to a pipe; a thread turns it
// into a cancel of the model call in flight, so the result is written within
// the grace period.
int run_with_cancel_on_signal(const runner::AppOptions& options, const runner::AppDeps& deps) {
  std::thread watcher([&deps] {
    char byte = 0;
    while (::read(g_wake_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    if (g_terminate) deps.cancel->cancel();
  });
  std::ios::sync_with_stdio(false);
  auto outcome = runner::run_heartbeat(options, deps);
  std::cout.flush();
  [[maybe_unused]] ssize_t woke = ::write(g_wake_pipe[1], "d", 1);
  watcher.join();
  return outcome.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything reads the key: no core dumps, no ptrace or /proc/PID/mem
  // by processes of the same user.
  ::prctl(PR_SET_DUMPABLE, 0);
  auto stderr_tail = std::make_shared<runner::LogTail>();
  auto logger = make_logger(stderr_tail);
  runner::AppOptions options;
  read_environment(options, *logger);
  const CommandLine line = read_command_line(argc, argv, options, *logger);
  if (line.exit_code) return *line.exit_code;
  if (!install_signal_handlers()) {
    logger->error("cannot create the signal pipe: {}", std::strerror(errno));
    return api::kExitInternalError;
  }
  http::ClientOptions http_options;
  http_options.tls.ca_file = line.ca_file;
  http_options.ca_description = line.ca_file.empty() ? "system CAs" : line.ca_file;
  auto http = http::make_client(http_options);
  std::unique_ptr<kube::Client> kube_client = make_kube_client(logger);
  runner::SystemClock clock;
  const int exit_code = run_with_cancel_on_signal(
      options, make_deps(clock, *http, kube_client.get(), logger, stderr_tail));
#if defined(__SANITIZE_ADDRESS__)
  // LeakSanitizer's exit-time check ptrace-attaches this process, which a
  // non-dumpable process refuses; the heartbeat is over by now.
  ::prctl(PR_SET_DUMPABLE, 1);
#endif
  return exit_code;
}
