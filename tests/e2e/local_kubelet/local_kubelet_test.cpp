// hb-local-kubelet's pure parts: flags, image mapping, the launch plan of a
// Pod as the operator's Job builder makes it, and the status it writes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <map>

#include "kube/kubeconfig.h"
#include "tests/e2e/local_kubelet/image_map.h"
#include "tests/e2e/local_kubelet/launch_plan.h"
#include "tests/e2e/local_kubelet/node_object.h"
#include "tests/e2e/local_kubelet/options.h"
#include "tests/e2e/local_kubelet/pod_status.h"

namespace hb::local_kubelet {
namespace {

using Env = std::map<std::string, std::string>;

std::function<std::optional<std::string>(const std::string&)> env_of(Env env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Options, DefaultsAndEnvironment) {
  auto parsed = parse_options({"--image=heartbeat-runner=/b/runner"},
                              env_of({{"KUBECONFIG", "/k/a:/k/b"}, {"TMPDIR", "/t"}}));
  ASSERT_TRUE(parsed.options) << parsed.error;
  EXPECT_EQ(parsed.options->kubeconfig, "/k/a");
  EXPECT_EQ(parsed.options->node_name, "local-executor");
  EXPECT_EQ(parsed.options->state_dir, "/t/hb-local-kubelet.local-executor");
  EXPECT_EQ(parsed.options->max_pods, kMaxPodsDefault);
  EXPECT_EQ(parsed.options->namespace_, "");
}

TEST(Options, EveryFlagInBothForms) {
  auto parsed = parse_options({"--kubeconfig", "/k", "--namespace=ns", "--node-name=n1",
                               "--state-dir", "/s", "--image=a=/x", "--image", "b=/y",
                               "--max-pods=3", "--pass-env=LSAN_OPTIONS", "--delete-node-on-exit"},
                              env_of({}));
  ASSERT_TRUE(parsed.options) << parsed.error;
  const Options& o = *parsed.options;
  EXPECT_EQ(o.kubeconfig, "/k");
  EXPECT_EQ(o.namespace_, "ns");
  EXPECT_EQ(o.node_name, "n1");
  EXPECT_EQ(o.state_dir, "/s");
  EXPECT_EQ(o.max_pods, 3);
  EXPECT_EQ(o.pass_env, std::vector<std::string>{"LSAN_OPTIONS"});
  EXPECT_TRUE(o.delete_node_on_exit);
  EXPECT_EQ(o.images.binary_for("b:1"), "/y");
}

TEST(Options, ErrorsNameTheFlag) {
  auto error = [](std::vector<std::string> args, Env env = {{"KUBECONFIG", "/k"}}) {
    return parse_options(args, env_of(env)).error;
  };
  EXPECT_NE(error({"--image=a=/x"}, {}).find("--kubeconfig"), std::string::npos);
  EXPECT_NE(error({}).find("--image"), std::string::npos);
  EXPECT_NE(error({"--image=a=relative"}).find("--image"), std::string::npos);
  EXPECT_NE(error({"--image=noequals"}).find("PREFIX=PATH"), std::string::npos);
  EXPECT_NE(error({"--image=a=/x", "--max-pods=0"}).find("--max-pods"), std::string::npos);
  EXPECT_NE(error({"--image=a=/x", "--bogus=1"}).find("--bogus"), std::string::npos);
  EXPECT_NE(error({"--image=a=/x", "--namespace"}).find("--namespace needs a value"),
            std::string::npos);
}

TEST(ImageMap, LongestPrefixWinsAnyTag) {
  ImageMap images;
  ASSERT_EQ(images.add("heartbeat-runner=/b/runner"), "");
  ASSERT_EQ(images.add("heartbeat-runner-debug=/b/debug"), "");
  EXPECT_EQ(images.binary_for("heartbeat-runner:local"), "/b/runner");
  EXPECT_EQ(images.binary_for("heartbeat-runner@sha256:abc"), "/b/runner");
  EXPECT_EQ(images.binary_for("heartbeat-runner-debug:1"), "/b/debug");
  EXPECT_FALSE(images.binary_for("ghcr.io/heartbeat-operator/heartbeat-runner:latest"));
}

TEST(ImageMap, ProgramForCommand) {
  EXPECT_EQ(program_for("", "/b/heartbeat-runner"), "/b/heartbeat-runner");
  EXPECT_EQ(program_for("/usr/local/bin/heartbeat-runner", "/b/heartbeat-runner"),
            "/b/heartbeat-runner");
  EXPECT_EQ(program_for("/bin/sh", "/b/heartbeat-runner"), "/bin/sh");
}

TEST(Expand, KubernetesVariableReferences) {
  std::vector<std::pair<std::string, std::string>> vars = {{"A", "1"}, {"B", "two"}};
  EXPECT_EQ(expand_references("$(A)-$(B)", vars), "1-two");
  EXPECT_EQ(expand_references("$(MISSING) $$(A) $", vars), "$(MISSING) $(A) $");
  EXPECT_EQ(expand_references("$(A", vars), "$(A");
}

TEST(Rewrite, LongestMountAndFlagForms) {
  std::vector<std::pair<std::string, std::string>> rw = {
      {"/etc/heartbeat/x", "/L/x"}, {"/etc/heartbeat", "/L/ctx"}, {"/tmp", "/L/tmp"}};
  EXPECT_EQ(rewrite_path("/etc/heartbeat/context.json", rw), "/L/ctx/context.json");
  EXPECT_EQ(rewrite_path("/etc/heartbeat/x/y", rw), "/L/x/y");
  EXPECT_EQ(rewrite_path("/etc/heartbeatx", rw), "/etc/heartbeatx");
  EXPECT_EQ(rewrite_path("--context=/etc/heartbeat/c.json", rw), "--context=/L/ctx/c.json");
  EXPECT_EQ(rewrite_path("/tmp", rw), "/L/tmp");
  EXPECT_EQ(rewrite_path("plain", rw), "plain");
}

// A Pod as the Job controller creates it from the operator's Job, after the
// ServiceAccount admission plugin added the token volume.
Json runner_pod() {
  return Json::parse(R"json({
    "metadata": {"name": "example-1-abcde", "namespace": "default", "uid": "u-1",
                 "labels": {"heartbeat.dev/agent": "example"},
                 "annotations": {"heartbeat.dev/run-name": "example-1"}},
    "spec": {
      "restartPolicy": "Never",
      "serviceAccountName": "example-heartbeat",
      "automountServiceAccountToken": true,
      "terminationGracePeriodSeconds": 30,
      "containers": [{
        "name": "runner",
        "image": "heartbeat-runner:local",
        "command": ["/usr/local/bin/heartbeat-runner"],
        "env": [
          {"name": "HEARTBEAT_RUN_NAME", "value": "example-1"},
          {"name": "HEARTBEAT_CONTEXT_PATH", "value": "/etc/heartbeat/context.json"},
          {"name": "HEARTBEAT_TERMINATION_PATH", "value": "/dev/termination-log"},
          {"name": "HEARTBEAT_API_KEY",
           "valueFrom": {"secretKeyRef": {"name": "example-llm", "key": "api-key"}}},
          {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
          {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
          {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
          {"name": "RUN", "valueFrom": {"fieldRef":
              {"fieldPath": "metadata.annotations['heartbeat.dev/run-name']"}}},
          {"name": "COLOR", "valueFrom": {"configMapKeyRef":
              {"name": "settings", "key": "color"}}},
          {"name": "OPTIONAL", "valueFrom": {"secretKeyRef":
              {"name": "absent", "key": "k", "optional": true}}},
          {"name": "GREETING", "value": "run $(HEARTBEAT_RUN_NAME) on $(NODE)"}
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [
          {"name": "context", "mountPath": "/etc/heartbeat", "readOnly": true},
          {"name": "tmp", "mountPath": "/tmp"},
          {"name": "example-heartbeat-token-x1", "readOnly": true,
           "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        ]
      }],
      "volumes": [
        {"name": "context", "configMap": {"name": "example-1-context",
            "items": [{"key": "context.json", "path": "context.json"}]}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
        {"name": "example-heartbeat-token-x1",
         "secret": {"secretName": "example-heartbeat-token-x1", "defaultMode": 420}}
      ]
    }
  })json");
}

struct Cluster {
  std::map<std::string, Json> config_maps, secrets;
  int lookups = 0;
  PlanInputs inputs(const ImageMap& images) {
    PlanInputs in;
    in.pod_dir = "/state/pods/default_example-1-abcde_u-1";
    in.images = &images;
    in.node_name = "local-executor";
    in.config_map = [this](const std::string& name) -> std::optional<Json> {
      ++lookups;
      auto it = config_maps.find(name);
      if (it == config_maps.end()) return std::nullopt;
      return it->second;
    };
    in.secret = [this](const std::string& name) -> std::optional<Json> {
      ++lookups;
      auto it = secrets.find(name);
      if (it == secrets.end()) return std::nullopt;
      return it->second;
    };
    in.service_account_token = "tok";
    in.service_account_kubeconfig = "kubeconfig text";
    return in;
  }
};

Cluster full_cluster() {
  Cluster c;
  c.config_maps["example-1-context"] = {{"data", {{"context.json", "{\"kind\":\"ctx\"}"}}}};
  c.config_maps["settings"] = {{"data", {{"color", "blue"}}}};
  c.secrets["example-llm"] = {{"data", {{"api-key", kube::base64_encode("sk-123")}}}};
  c.secrets["example-heartbeat-token-x1"] = {
      {"type", "kubernetes.io/service-account-token"},
      {"data", {{"token", kube::base64_encode("tok")}, {"ca.crt", kube::base64_encode("CA")}}}};
  return c;
}

ImageMap runner_images() {
  ImageMap images;
  images.add("heartbeat-runner=/build/runner/heartbeat-runner");
  return images;
}

std::map<std::string, std::string> env_map(const LocalLaunch& l) {
  return {l.env.begin(), l.env.end()};
}

TEST(Plan, RunnerPodBecomesALocalProcess) {
  Cluster cluster = full_cluster();
  ImageMap images = runner_images();
  PlanResult result = plan_launch(runner_pod(), cluster.inputs(images));
  ASSERT_TRUE(std::holds_alternative<LocalLaunch>(result)) << std::get<PlanProblem>(result).message;
  const LocalLaunch& l = std::get<LocalLaunch>(result);
  const std::string dir = "/state/pods/default_example-1-abcde_u-1";
  EXPECT_EQ(l.argv, std::vector<std::string>{"/build/runner/heartbeat-runner"});
  auto env = env_map(l);
  EXPECT_EQ(env["HEARTBEAT_CONTEXT_PATH"], dir + "/volumes/context/context.json");
  EXPECT_EQ(env["HEARTBEAT_TERMINATION_PATH"], dir + "/termination-log");
  EXPECT_EQ(env["HEARTBEAT_API_KEY"], "sk-123");
  EXPECT_EQ(env["POD"], "example-1-abcde");
  EXPECT_EQ(env["NODE"], "local-executor");
  EXPECT_EQ(env["IP"], "127.0.0.1");
  EXPECT_EQ(env["RUN"], "example-1");
  EXPECT_EQ(env["COLOR"], "blue");
  EXPECT_EQ(env.count("OPTIONAL"), 0u);
  EXPECT_EQ(env["GREETING"], "run example-1 on local-executor");
  EXPECT_EQ(env["TMPDIR"], dir + "/volumes/tmp");
  EXPECT_EQ(env["HEARTBEAT_KUBECONFIG"], dir + "/kubeconfig");
  EXPECT_EQ(env["KUBECONFIG"], dir + "/kubeconfig");
  EXPECT_EQ(env["HOSTNAME"], "example-1-abcde");
  EXPECT_EQ(env["PATH"], kDefaultPath);
  EXPECT_EQ(env.count("KUBERNETES_SERVICE_HOST"), 0u);  // the runner must use the kubeconfig
  EXPECT_EQ(l.termination_path, dir + "/termination-log");
  EXPECT_EQ(l.termination_policy, "FallbackToLogsOnError");
  EXPECT_EQ(l.log_path, dir + "/container.log");
  EXPECT_EQ(l.working_dir, dir + "/work");

  std::map<std::string, std::pair<std::string, int>> files;
  for (const auto& f : l.files) files[f.path] = {f.content, f.mode};
  EXPECT_EQ(files[dir + "/volumes/context/context.json"].first, "{\"kind\":\"ctx\"}");
  EXPECT_EQ(files[dir + "/volumes/example-heartbeat-token-x1/token"].first, "tok");
  EXPECT_EQ(files[dir + "/volumes/example-heartbeat-token-x1/ca.crt"].first, "CA");
  EXPECT_EQ(files[dir + "/kubeconfig"], (std::pair<std::string, int>{"kubeconfig text", 0600}));
  EXPECT_EQ(files.count(dir + "/termination-log"), 1u);
}

TEST(Plan, MissingThingsWaitAndUnsupportedThingsFail) {
  ImageMap images = runner_images();
  {
    ImageMap none;
    none.add("other=/x");
    Cluster cluster = full_cluster();
    auto r = plan_launch(runner_pod(), cluster.inputs(none));
    const auto& p = std::get<PlanProblem>(r);
    EXPECT_FALSE(p.fatal);
    EXPECT_EQ(p.reason, "ErrImagePull");
    EXPECT_NE(p.message.find("heartbeat-runner:local"), std::string::npos);
    EXPECT_NE(p.message.find("--image="), std::string::npos);
  }
  {
    Cluster cluster = full_cluster();
    cluster.secrets.erase("example-llm");
    auto p = std::get<PlanProblem>(plan_launch(runner_pod(), cluster.inputs(images)));
    EXPECT_FALSE(p.fatal);
    EXPECT_EQ(p.reason, "CreateContainerConfigError");
    EXPECT_NE(p.message.find("secret \"example-llm\" not found"), std::string::npos);
  }
  {
    Cluster cluster = full_cluster();
    cluster.config_maps["settings"] = {{"data", Json::object()}};
    auto p = std::get<PlanProblem>(plan_launch(runner_pod(), cluster.inputs(images)));
    EXPECT_NE(p.message.find("couldn't find key color"), std::string::npos);
  }
  {
    Cluster cluster = full_cluster();
    cluster.config_maps.erase("example-1-context");
    auto p = std::get<PlanProblem>(plan_launch(runner_pod(), cluster.inputs(images)));
    EXPECT_FALSE(p.fatal);
    EXPECT_EQ(p.reason, "ContainerCreating");
  }
  {
    Cluster cluster = full_cluster();
    Json pod = runner_pod();
    pod["spec"]["containers"].push_back(pod["spec"]["containers"][0]);
    auto p = std::get<PlanProblem>(plan_launch(pod, cluster.inputs(images)));
    EXPECT_TRUE(p.fatal);
    EXPECT_NE(p.message.find("single-container"), std::string::npos);
  }
  {
    Cluster cluster = full_cluster();
    Json pod = runner_pod();
    pod["spec"]["volumes"].push_back({{"name", "h"}, {"hostPath", {{"path", "/"}}}});
    auto p = std::get<PlanProblem>(plan_launch(pod, cluster.inputs(images)));
    EXPECT_TRUE(p.fatal);
    EXPECT_NE(p.message.find("hostPath"), std::string::npos);
  }
}

TEST(Plan, CommandArgsWorkingDirAndDownwardApi) {
  Cluster cluster = full_cluster();
  ImageMap images;
  images.add("busybox=/bin/busybox");
  Json pod = runner_pod();
  Json& c = pod["spec"]["containers"][0];
  c["image"] = "busybox:1.36";
  c["command"] = {"/bin/sh", "-c"};
  c["args"] = {"cat /etc/heartbeat/context.json > $(TMPDIR)/x", "--out=/tmp/y"};
  c["env"] = {{{"name", "TMPDIR"}, {"value", "/tmp"}}};
  c["workingDir"] = "/tmp";
  pod["spec"]["volumes"][0] = {
      {"name", "context"},
      {"downwardAPI",
       {{"items",
         {{{"path", "context.json"},
           {"fieldRef", {{"fieldPath", "metadata.annotations['heartbeat.dev/run-name']"}}}}}}}}};
  pod["spec"]["automountServiceAccountToken"] = false;
  EXPECT_EQ(wants_service_account(pod), "");
  auto in = cluster.inputs(images);
  in.service_account_kubeconfig.clear();
  auto l = std::get<LocalLaunch>(plan_launch(pod, in));
  const std::string dir = in.pod_dir;
  EXPECT_EQ(l.argv,
            (std::vector<std::string>{"/bin/sh", "-c",
                                      "cat /etc/heartbeat/context.json > " + dir + "/volumes/tmp/x",
                                      "--out=" + dir + "/volumes/tmp/y"}));
  EXPECT_EQ(l.working_dir, dir + "/volumes/tmp");
  EXPECT_EQ(env_map(l)["TMPDIR"], dir + "/volumes/tmp");
  EXPECT_EQ(env_map(l).count("KUBECONFIG"), 0u);
  bool found = false;
  for (const auto& f : l.files) {
    if (f.path == dir + "/volumes/context/context.json") found = f.content == "example-1";
  }
  EXPECT_TRUE(found);
}

TEST(Kubeconfig, TokenKubeconfigLoadsWithOurOwnParser) {
  const std::string text =
      render_token_kubeconfig("https://127.0.0.1:6443", "PEM\n", false, "tok.en-1", "default");
  kube::ClusterConfig config = kube::parse_kubeconfig(text, "/x/kubeconfig");
  EXPECT_EQ(config.server, "https://127.0.0.1:6443");
  EXPECT_EQ(config.tls.ca_pem, "PEM\n");
  EXPECT_EQ(config.token, "tok.en-1");
  EXPECT_EQ(config.default_namespace, "default");
}

TEST(Status, ExitFromWaitStatus) {
  EXPECT_EQ(exit_from_wait_status(W_EXITCODE(3, 0)).exit_code, 3);
  EXPECT_FALSE(exit_from_wait_status(W_EXITCODE(0, 0)).signal);
  ExitStatus killed = exit_from_wait_status(SIGKILL);  // raw status of a SIGKILLed child
  EXPECT_EQ(killed.exit_code, 137);
  EXPECT_EQ(killed.signal, SIGKILL);
}

TEST(Status, TerminationMessageRules) {
  std::string big(5000, 'x');
  EXPECT_EQ(termination_message(big, "", 0, "File").size(), kTerminationMessageBytesMax);
  EXPECT_EQ(termination_message("", "log line\n", 1, "File"), "");
  EXPECT_EQ(termination_message("", "log line\n", 0, "FallbackToLogsOnError"), "");
  EXPECT_EQ(termination_message("", "a\nlog line\n", 2, "FallbackToLogsOnError"), "a\nlog line\n");
  EXPECT_EQ(termination_message("{\"r\":1}", "log", 2, "FallbackToLogsOnError"), "{\"r\":1}");
}

TEST(Status, LogTailKeepsLastLinesAndBytes) {
  std::string log;
  for (int i = 0; i < 100; ++i) log += "line " + std::to_string(i) + "\n";
  std::string tail = log_tail(log);
  EXPECT_EQ(tail.rfind("line 20\n", 0), 0u) << tail.substr(0, 20);
  EXPECT_EQ(log_tail(log, 2048, 2), "line 98\nline 99\n");
  EXPECT_EQ(log_tail(std::string(3000, 'z')).size(), kFallbackLogBytesMax);
  EXPECT_EQ(log_tail("only"), "only");
  EXPECT_EQ(log_tail(""), "");
}

TEST(Status, PatchesLookLikeAKubeletsStatus) {
  ContainerInfo c{"runner", "heartbeat-runner:local", "local://n/42"};
  Json running = running_patch(c, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")["status"];
  EXPECT_EQ(running["phase"], "Running");
  EXPECT_EQ(running["podIP"], "127.0.0.1");
  EXPECT_EQ(running["containerStatuses"][0]["state"]["running"]["startedAt"],
            "2026-01-01T00:00:00Z");
  EXPECT_EQ(running["containerStatuses"][0]["ready"], true);

  Termination t{{143, SIGTERM}, "", "{\"stopReason\":\"cancelled\"}", "s", "f"};
  Json done = terminated_patch(c, t, "f")["status"];
  EXPECT_EQ(done["phase"], "Failed");
  const Json& term = done["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(term["exitCode"], 143);
  EXPECT_EQ(term["signal"], SIGTERM);
  EXPECT_EQ(term["reason"], "Error");
  EXPECT_EQ(term["message"], "{\"stopReason\":\"cancelled\"}");
  EXPECT_EQ(term["startedAt"], "s");
  EXPECT_EQ(term["finishedAt"], "f");

  Json ok = terminated_patch(c, {{0, std::nullopt}, "", "", "s", "f"}, "f")["status"];
  EXPECT_EQ(ok["phase"], "Succeeded");
  EXPECT_EQ(ok["containerStatuses"][0]["state"]["terminated"]["reason"], "Completed");
  EXPECT_FALSE(ok["containerStatuses"][0]["state"]["terminated"].contains("signal"));

  Json waiting = waiting_patch(c, "ErrImagePull", "not mapped", "now")["status"];
  EXPECT_EQ(waiting["phase"], "Pending");
  EXPECT_EQ(waiting["containerStatuses"][0]["state"]["waiting"]["reason"], "ErrImagePull");
}

TEST(Node, ObjectIsReadyWithCapacity) {
  NodeFacts f{"local-executor", 20, 2, 1024, "6.1", "amd64"};
  Json node = node_object(f, "t0");
  EXPECT_EQ(node["metadata"]["name"], "local-executor");
  EXPECT_EQ(node["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(node["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(node["status"]["capacity"]["pods"], "20");
  Json stopped = node_status_patch(f, false, "t1", "t2")["status"];
  EXPECT_EQ(stopped["conditions"][0]["status"], "False");
  EXPECT_EQ(stopped["conditions"][0]["lastHeartbeatTime"], "t2");
}

}  // namespace
}  // namespace hb::local_kubelet
