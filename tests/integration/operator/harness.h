// Integration harness: the real control plane (KUBECONFIG from the ctest
// fixture), the CRDs, a namespace per test, the heartbeat-operator binary as
// a child process that tests can SIGKILL and restart, and the fake kubelet.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "http/http.h"
#include "kube/client.h"
#include "kube/errors.h"
#include "kube/kubeconfig.h"
#include "tests/support/fake_kubelet.h"

namespace hb::testing {

using nlohmann::json;
using namespace std::chrono_literals;

inline std::string env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v ? std::string(v) : fallback;
}

inline bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                       std::chrono::milliseconds every = 200ms) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (done()) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(every);
  }
  try {
    return done();
  } catch (const std::exception&) {
    return false;
  }
}

// A loopback port nothing is bound to now, picked below the kernel's
// ephemeral range: a port bind(0) hands out is in that range, so another
// test's outgoing connection can take it before the operator listens
// (seen in CI as "Address already in use"). scripts/free-port.py is the
// shell scripts' twin.
inline int free_port() {
  constexpr int kLowestPort = 10000;
  constexpr int kEphemeralLowDefault = 32768;
  constexpr int kAttemptsMax = 500;
  int ephemeral_low = kEphemeralLowDefault;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  // Never the same port twice in one test process (two operators' three
  // ports each are picked before either listens).
  static std::mutex handed_out_mutex;
  static std::set<int> handed_out;
  std::lock_guard<std::mutex> lock(handed_out_mutex);
  std::mt19937 random{std::random_device{}()};
  std::uniform_int_distribution<int> pick(kLowestPort,
                                          std::max(kLowestPort + 1, ephemeral_low - 1));
  for (int attempt = 0; attempt < kAttemptsMax; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(pick(random)));
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(fd);
    const int port = ntohs(addr.sin_port);
    if (bound && handed_out.insert(port).second) return port;
  }
  throw std::runtime_error("could not find a free loopback port below the ephemeral range");
}

inline std::string tail_of_file(const std::string& path, size_t max_bytes = 4000) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
}

class OperatorProcess {
 public:
  // log_path: the operator's stderr (appended); shown when a test fails.
  OperatorProcess(std::vector<std::string> args, std::string log_path)
      : args_(std::move(args)), log_path_(std::move(log_path)) {
    metrics_port_ = free_port();
    health_port_ = free_port();
    wakeup_port_ = free_port();
  }
  ~OperatorProcess() { kill(SIGKILL); }

  void start() {
    const std::string binary = env("HB_BUILD_DIR", ".") + "/operator/heartbeat-operator";
    std::vector<std::string> argv = {
        binary, "--metrics-address=127.0.0.1:" + std::to_string(metrics_port_),
        "--health-address=127.0.0.1:" + std::to_string(health_port_),
        "--wakeup-address=127.0.0.1:" + std::to_string(wakeup_port_), "--log-format=text",
        // Plain metrics (the tests read them without a token, in plain HTTP:
        // with auth none --metrics-secure is off); a test's own
        // --metrics-auth later in the arguments wins.
        "--metrics-auth=none"};
    argv.insert(argv.end(), args_.begin(), args_.end());
    // Everything is prepared before fork: the child only calls
    // async-signal-safe functions (the parent has threads).
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    pid_ = fork();
    if (pid_ == 0) {
      // Die with the test: an orphaned operator would hold ctest's output
      // pipe open and hang the run until its timeout.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (null_fd >= 0) dup2(null_fd, 1);
      if (fd >= 0) dup2(fd, 2);
      execv(binary.c_str(), c.data());
      _exit(127);
    }
    if (fd >= 0) ::close(fd);
    if (null_fd >= 0) ::close(null_fd);
  }

  void kill(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    pid_ = -1;
  }
  int exit_status() const { return exit_status_; }
  pid_t pid() const { return pid_; }
  // Reaps the child if it has exited on its own; true while it runs.
  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    pid_ = -1;
    return false;
  }
  const std::string& log_path() const { return log_path_; }

  std::string get(int port, const std::string& path) {
    auto client = http::make_client({});
    http::Request r;
    r.url = "http://127.0.0.1:" + std::to_string(port) + path;
    r.timeout = 5s;
    http::Response resp = client->send(r);
    last_status_ = resp.status;
    return resp.body;
  }
  http::Response post(const std::string& path, const std::string& body, const std::string& token,
                      const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    auto client = http::make_client({});
    http::Request r;
    r.method = "POST";
    r.url = "http://127.0.0.1:" + std::to_string(wakeup_port_) + path;
    r.body = body;
    r.headers.push_back({"Content-Type", "application/json"});
    if (!token.empty()) r.headers.push_back({"Authorization", "Bearer " + token});
    r.headers.insert(r.headers.end(), headers.begin(), headers.end());
    r.timeout = 5s;
    return client->send(r);
  }
  bool ready() { return get(health_port_, "/readyz") == "ok"; }
  // Starts the process; true once /readyz answers ok within `timeout`. A
  // process that exits first throws (no point waiting out the timeout).
  bool start_until_ready(std::chrono::milliseconds timeout) {
    start();
    return wait_until(
        [&] {
          if (!alive()) throw std::runtime_error("operator exited");
          return ready();
        },
        timeout);
  }
  int metrics_port() const { return metrics_port_; }
  int health_port() const { return health_port_; }
  int wakeup_port() const { return wakeup_port_; }
  double metric(const std::string& line_prefix) {
    const std::string text = get(metrics_port_, "/metrics");
    size_t pos = 0;
    double total = 0;
    while ((pos = text.find(line_prefix, pos)) != std::string::npos) {
      if (pos == 0 || text[pos - 1] == '\n') {
        const size_t space = text.find(' ', pos + line_prefix.size());
        const size_t end = text.find('\n', space);
        total += std::stod(text.substr(space + 1, end - space - 1));
      }
      pos += line_prefix.size();
    }
    return total;
  }

 private:
  std::vector<std::string> args_;
  std::string log_path_;
  pid_t pid_ = -1;
  int exit_status_ = -1;
  int metrics_port_, health_port_, wakeup_port_;
  int last_status_ = 0;
};

class ClusterFixture {
 public:
  static std::shared_ptr<kube::Client> client() {
    // Never destroyed: one client (and its kept-alive connections) for the
    // whole suite, with no order to keep among statics at exit.
    static const auto* const c = new std::shared_ptr<kube::Client>([] {
      kube::ClientOptions o;
      o.qps = 0;
      return std::make_shared<kube::Client>(kube::load_default().or_throw(), o);
    }());
    return *c;
  }
  static void install_crds() {
    const std::string crds = env("HB_SOURCE_DIR", ".") + "/crds";
    const std::string cmd = "kubectl apply -f " + crds +
                            " >/dev/null && kubectl wait --for condition=established --timeout=60s "
                            "crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev "
                            "crd/heartbeatpolicies.heartbeat.dev >/dev/null";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("could not install the CRDs");
  }
  static std::string make_namespace(const std::string& prefix) {
    static std::mt19937 rng{std::random_device{}()};
    const std::string name = prefix + "-" + std::to_string(rng() % 1000000);
    client()
        ->create(kube::resources::kNamespaces, "",
                 {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}})
        .or_throw();
    client()
        ->create(
            kube::resources::kSecrets, name,
            {{"apiVersion", "v1"},
             {"kind", "Secret"},
             {"metadata", {{"name", "llm"}}},
             {"stringData", {{"api-key", "sk-test-not-a-real-key"}, {"token", "s3cret-token"}}}})
        .or_throw();
    return name;
  }
};

inline json agent_manifest(const std::string& name, const json& heartbeat,
                           const json& extra = json::object()) {
  json a = {{"apiVersion", "heartbeat.dev/v1alpha1"},
            {"kind", "Agent"},
            {"metadata", {{"name", name}}},
            {"spec",
             {{"type", "react_agent"},
              {"model",
               {{"provider", "openai"},
                {"model", "stand-in"},
                {"apiKeySecretRef", {{"name", "llm"}, {"key", "api-key"}}},
                {"pricing",
                 {{"inputCentsPerMillionTokens", kFakeInputCentsPerMillionTokens},
                  {"outputCentsPerMillionTokens", kFakeOutputCentsPerMillionTokens}}}}},
              {"heartbeat", heartbeat},
              {"runtime", {{"timeoutSeconds", 120}, {"graceSeconds", 1}}}}}};
  a["spec"].merge_patch(extra);
  return a;
}

inline json manual_run(const std::string& agent, const std::string& name) {
  return {{"apiVersion", "heartbeat.dev/v1alpha1"},
          {"kind", "HeartbeatRun"},
          {"metadata", {{"name", name}}},
          {"spec", {{"agentRef", {{"name", agent}}}, {"invocationSource", "manual"}}}};
}

}  // namespace hb::testing
