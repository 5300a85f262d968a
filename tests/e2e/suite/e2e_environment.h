// The end-to-end suite's world, set up once per test binary on the real
// local control plane (the ctest `control_plane` fixture):
//   - the Helm chart installed (CRDs, ServiceAccount, RBAC; no operator Pod:
//     no Deployment controller runs here), and a kubeconfig holding the
//     chart ServiceAccount's token, so every operator the tests start acts
//     with the chart's RBAC and an RBAC mistake fails the suite;
//   - hb-fake-model, the scripted stand-in model (directives in the heartbeat
//     prompt steer it: [[pause N]], [[sleep N]], ...);
//   - hb-local-kubelet, the local pod executor that runs heartbeat-runner as
//     a local process for each Pod.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "tests/e2e/suite/child_process.h"
#include "tests/integration/operator/harness.h"

namespace hb::testing {

inline constexpr const char* kRunnerImage = "heartbeat-runner:e2e";
inline constexpr const char* kReleaseName = "hb-e2e";
inline constexpr const char* kReleaseNamespace = "hb-e2e-system";
// The chart's values the operators of the suite mirror (see install_chart).
inline constexpr const char* kLeaderLease = "heartbeat-operator-leader";
inline constexpr const char* kWakeupSecret = "hb-e2e-wakeup";
inline constexpr const char* kWakeupToken = "e2e-wakeup-token";

// Runs a shell command; returns its stdout, throws with the output on failure.
inline std::string sh(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status != 0) throw std::runtime_error("command failed: " + command + "\n" + out);
  return out;
}

inline std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The pid of the local process running `run` in `ns` (found by the identity
// the operator puts into the Pod's env), or -1.
inline pid_t runner_pid(const std::string& ns, const std::string& run) {
  const std::string want_run = "HEARTBEAT_RUN_NAME=" + run;
  const std::string want_ns = "HEARTBEAT_NAMESPACE=" + ns;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    const std::string environ = read_file("/proc/" + std::string(e->d_name) + "/environ");
    bool has_run = false, has_ns = false;
    size_t start = 0;
    while (start < environ.size()) {
      size_t end = environ.find('\0', start);
      if (end == std::string::npos) end = environ.size();
      const std::string_view var(environ.data() + start, end - start);
      has_run = has_run || var == want_run;
      has_ns = has_ns || var == want_ns;
      start = end + 1;
    }
    if (has_run && has_ns) {
      found = pid;
      break;
    }
  }
  closedir(proc);
  return found;
}

class E2eEnvironment : public ::testing::Environment {
 public:
  static E2eEnvironment* instance;

  void SetUp() override {
    instance = this;
    source_ = env("HB_SOURCE_DIR", ".");
    build_ = env("HB_BUILD_DIR", ".");
    dir_ = build_ + "/Testing/e2e";
    sh("mkdir -p " + dir_);
    kubectl_ = last_line(sh("bash " + source_ + "/scripts/build-kube.sh")) + "/kubectl";
    helm_ = last_line(sh("bash " + source_ + "/scripts/install-helm.sh"));
    install_chart();
    write_operator_kubeconfig();
    start_fake_model();
    start_local_kubelet();
  }

  void TearDown() override {
    kubelet_.stop(std::chrono::seconds(10));
    model_.stop(std::chrono::seconds(2));
    try {
      sh(helm_ + " uninstall " + kReleaseName + " --namespace " + kReleaseNamespace + " --wait");
      sh(kubectl_ + " delete namespace " + kReleaseNamespace + " --wait=false");
    } catch (const std::exception& e) {
      std::cerr << "e2e teardown: " << e.what() << std::endl;
    }
  }

  const std::string& kubectl() const { return kubectl_; }
  const std::string& operator_kubeconfig() const { return operator_kubeconfig_; }
  const std::string& dir() const { return dir_; }
  std::string model_base_url() const {
    return "http://127.0.0.1:" + std::to_string(model_port_) + "/v1";
  }
  bool helpers_alive() { return model_.alive() && kubelet_.alive(); }

 private:
  void install_chart() {
    const std::string chart = source_ + "/helm/heartbeat-operator";
    // Upgrade-or-install, so a release left over by a killed suite is taken
    // over. No --wait: this control plane runs no Deployment controller, so
    // the chart's operator Deployment never gets Pods; the tests run the
    // operator binary themselves with the chart's ServiceAccount.
    const std::string k = kubectl_ + " ";
    sh(k + "create namespace " + kReleaseNamespace + " --dry-run=client -o yaml | " + k +
       "apply -f -");
    sh(k + "-n " + kReleaseNamespace + " create secret generic " + kWakeupSecret +
       " --from-literal=token=" + kWakeupToken + " --dry-run=client -o yaml | " + k + "apply -f -");
    sh(helm_ + " upgrade --install " + kReleaseName + " " + chart + " --namespace " +
       kReleaseNamespace + " --set image.tag=e2e --set wakeup.enabled=true" +
       " --set wakeup.clusterTokenSecret=" + kWakeupSecret +
       " --set rbac.aggregateToDefaultRoles=true --set leaderElection.enabled=true");
    sh(kubectl_ + " wait --for condition=established --timeout=60s " +
       "crd/agents.heartbeat.dev crd/heartbeatruns.heartbeat.dev "
       "crd/heartbeatpolicies.heartbeat.dev");
  }

  // The chart ServiceAccount's token (Kubernetes 1.20 creates a token Secret
  // for every ServiceAccount) in a kubeconfig next to the admin one.
  void write_operator_kubeconfig() {
    const std::string sa = last_line(sh(kubectl_ + " get serviceaccount -n " + kReleaseNamespace +
                                        " -l app.kubernetes.io/instance=" + kReleaseName +
                                        " -o jsonpath='{.items[0].metadata.name}'"));
    std::string secret;
    ASSERT_TRUE(wait_until(
        [&] {
          secret = sh(kubectl_ + " get serviceaccount " + sa + " -n " + kReleaseNamespace +
                      " -o jsonpath='{.secrets[0].name}'");
          return !secret.empty();
        },
        std::chrono::seconds(30)))
        << "no token Secret for ServiceAccount " << sa;
    const std::string token = sh(kubectl_ + " get secret " + secret + " -n " + kReleaseNamespace +
                                 " -o jsonpath='{.data.token}' | base64 -d");
    const std::string server = sh(kubectl_ + " config view --minify --raw -o " +
                                  "jsonpath='{.clusters[0].cluster.server}'");
    const std::string ca_data = sh(kubectl_ + " config view --minify --raw -o " +
                                   "jsonpath='{.clusters[0].cluster.certificate-authority-data}'");
    operator_kubeconfig_ = dir_ + "/operator-kubeconfig";
    std::ofstream out(operator_kubeconfig_);
    out << "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: "
        << server << "\n    certificate-authority-data: " << ca_data
        << "\nusers:\n- name: operator\n  user:\n    token: " << token
        << "\ncontexts:\n- name: operator\n  context:\n    cluster: local\n    user: operator\n"
        << "current-context: operator\n";
    ASSERT_FALSE(token.empty()) << "empty token in Secret " << secret;
    std::cout << "[ e2e ] operator acts as ServiceAccount " << kReleaseNamespace << "/" << sa
              << std::endl;
  }

  void start_fake_model() {
    const std::string port_file = dir_ + "/fake-model.port";
    std::remove(port_file.c_str());
    model_.start(
        {build_ + "/tools/fake_model/hb-fake-model", "--port=0", "--port-file=" + port_file},
        dir_ + "/fake-model.log");
    ASSERT_TRUE(wait_until([&] { return !read_file(port_file).empty(); }, std::chrono::seconds(10)))
        << "hb-fake-model did not start; see " << model_.log_path();
    model_port_ = std::stoi(read_file(port_file));
  }

  void start_local_kubelet() {
    std::vector<std::string> argv = {
        build_ + "/tools/local_kubelet/hb-local-kubelet", "--kubeconfig=" + env("KUBECONFIG"),
        "--state-dir=" + dir_ + "/pods", "--node-name=e2e-local",
        "--image=heartbeat-runner=" + build_ + "/runner/heartbeat-runner"};
    // A sanitizer build's runner needs the tests' sanitizer settings too
    // (LeakSanitizer's suppressions for OpenSSL's global state).
    for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}) {
      if (std::getenv(name) != nullptr) argv.push_back(std::string("--pass-env=") + name);
    }
    kubelet_.start(argv, dir_ + "/local-kubelet.log");
    ASSERT_TRUE(wait_until([&] { return kubelet_.alive(); }, std::chrono::seconds(2)));
  }

  std::string source_, build_, dir_, kubectl_, helm_, operator_kubeconfig_;
  ChildProcess model_, kubelet_;
  int model_port_ = 0;
};

inline E2eEnvironment* E2eEnvironment::instance = nullptr;

}  // namespace hb::testing
