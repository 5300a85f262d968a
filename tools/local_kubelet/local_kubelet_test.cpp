// hb-local-kubelet's pure parts: flags, image mapping, the launch plan of a
// Pod as the operator's Job builder makes it, and the status it writes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <map>
#include <set>

#include "kube/kubeconfig.h"
#include "tools/local_kubelet/image_map.h"
#include "tools/local_kubelet/launch_plan.h"
#include "tools/local_kubelet/node_object.h"
#include "tools/local_kubelet/options.h"
#include "tools/local_kubelet/pod_status.h"

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
  // Another program of the image: looked up next to the mapped binary.
  auto in_build = [](const std::string& path) { return path == "/b/heartbeat-tools"; };
  EXPECT_EQ(program_for("/usr/local/bin/heartbeat-tools", "/b/heartbeat-runner", in_build),
            "/b/heartbeat-tools");
  EXPECT_EQ(program_for("heartbeat-tools", "/b/heartbeat-runner", in_build), "/b/heartbeat-tools");
  EXPECT_EQ(program_for("/bin/sh", "/b/heartbeat-runner", in_build), "/bin/sh");
  EXPECT_EQ(program_for("/usr/local/bin/heartbeat-tools", "/b/heartbeat-runner"),
            "/usr/local/bin/heartbeat-tools");
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

std::map<std::string, std::string> env_map(const ContainerLaunch& l) {
  return {l.env.begin(), l.env.end()};
}

std::map<std::string, std::pair<std::string, int>> files_of(const LocalLaunch& l) {
  std::map<std::string, std::pair<std::string, int>> files;
  for (const auto& f : l.files) files[f.path] = {f.content, f.mode};
  return files;
}

TEST(Plan, RunnerPodBecomesALocalProcess) {
  Cluster cluster = full_cluster();
  ImageMap images = runner_images();
  PlanResult result = plan_launch(runner_pod(), cluster.inputs(images));
  ASSERT_TRUE(std::holds_alternative<LocalLaunch>(result)) << std::get<PlanProblem>(result).message;
  const LocalLaunch& pod = std::get<LocalLaunch>(result);
  ASSERT_EQ(pod.containers.size(), 1u);
  const ContainerLaunch& l = pod.containers[0];
  const std::string dir = "/state/pods/default_example-1-abcde_u-1";
  const std::string home = dir + "/containers/runner";
  EXPECT_EQ(l.name, "runner");
  EXPECT_EQ(l.argv, std::vector<std::string>{"/build/runner/heartbeat-runner"});
  auto env = env_map(l);
  EXPECT_EQ(env["HEARTBEAT_CONTEXT_PATH"], dir + "/volumes/context/context.json");
  EXPECT_EQ(env["HEARTBEAT_TERMINATION_PATH"], home + "/termination-log");
  EXPECT_EQ(env["HEARTBEAT_API_KEY"], "sk-123");
  EXPECT_EQ(env["POD"], "example-1-abcde");
  EXPECT_EQ(env["NODE"], "local-executor");
  EXPECT_EQ(env["IP"], "127.0.0.1");
  EXPECT_EQ(env["RUN"], "example-1");
  EXPECT_EQ(env["COLOR"], "blue");
  EXPECT_EQ(env.count("OPTIONAL"), 0u);
  EXPECT_EQ(env["GREETING"], "run example-1 on local-executor");
  EXPECT_EQ(env["TMPDIR"], dir + "/volumes/tmp");
  EXPECT_EQ(env["HEARTBEAT_KUBECONFIG"], home + "/kubeconfig");
  EXPECT_EQ(env["KUBECONFIG"], home + "/kubeconfig");
  EXPECT_EQ(env["HOSTNAME"], "example-1-abcde");
  EXPECT_EQ(env["HOME"], home + "/work");
  EXPECT_EQ(env["PATH"], kDefaultPath);
  EXPECT_EQ(env.count("KUBERNETES_SERVICE_HOST"), 0u);  // the runner must use the kubeconfig
  EXPECT_EQ(l.termination_path, home + "/termination-log");
  EXPECT_EQ(l.termination_policy, "FallbackToLogsOnError");
  EXPECT_EQ(l.log_path, dir + "/runner.log");
  EXPECT_EQ(l.working_dir, home + "/work");
  EXPECT_FALSE(l.run_as.uid);  // no ids: the executor's own user, as before

  auto files = files_of(pod);
  EXPECT_EQ(files[dir + "/volumes/context/context.json"].first, "{\"kind\":\"ctx\"}");
  EXPECT_EQ(files[dir + "/volumes/example-heartbeat-token-x1/token"].first, "tok");
  EXPECT_EQ(files[dir + "/volumes/example-heartbeat-token-x1/ca.crt"].first, "CA");
  EXPECT_EQ(files[home + "/kubeconfig"], (std::pair<std::string, int>{"kubeconfig text", 0600}));
  EXPECT_EQ(files[home + "/termination-log"], (std::pair<std::string, int>{"", 0600}));
  for (const auto& d : pod.dirs) EXPECT_EQ(d.owner, Owner{}) << d.path;
}

// The heartbeat Pod as the operator builds it (api/heartbeat_pod.h): a
// trusted runner and an untrusted tools container, as different users.
Json heartbeat_pod() {
  return Json::parse(R"json({
    "metadata": {"name": "example-1-abcde", "namespace": "default", "uid": "u-2",
                 "annotations": {"heartbeat.dev/context": "{\"kind\":\"ctx\"}"}},
    "spec": {
      "restartPolicy": "Never",
      "automountServiceAccountToken": false,
      "serviceAccountName": "example-heartbeat",
      "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                          "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
      "containers": [{
        "name": "runner",
        "image": "heartbeat-runner:local",
        "command": ["/usr/local/bin/heartbeat-runner"],
        "env": [
          {"name": "HEARTBEAT_API_KEY",
           "valueFrom": {"secretKeyRef": {"name": "example-llm", "key": "api-key"}}},
          {"name": "HEARTBEAT_TOOLS_SOCKET", "value": "/run/heartbeat-tools/tools.sock"},
          {"name": "HEARTBEAT_CONTEXT_PATH", "value": "/etc/heartbeat/context.json"}
        ],
        "terminationMessagePath": "/dev/termination-log",
        "volumeMounts": [
          {"name": "context", "mountPath": "/etc/heartbeat", "readOnly": true},
          {"name": "tmp", "mountPath": "/tmp"},
          {"name": "tools-socket", "mountPath": "/run/heartbeat-tools"},
          {"name": "kube-api-access", "readOnly": true,
           "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        ]
      }, {
        "name": "tools",
        "image": "heartbeat-runner:local",
        "command": ["/usr/local/bin/heartbeat-tools", "--socket=/run/heartbeat-tools/tools.sock"],
        "securityContext": {"runAsUser": 65533, "runAsGroup": 65533,
                            "readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
                            "capabilities": {"drop": ["ALL"]}},
        "workingDir": "/workspace",
        "volumeMounts": [
          {"name": "tools-socket", "mountPath": "/run/heartbeat-tools"},
          {"name": "workspace", "mountPath": "/workspace"},
          {"name": "tools-tmp", "mountPath": "/tmp"}
        ]
      }],
      "volumes": [
        {"name": "context", "downwardAPI": {"items": [{"path": "context.json",
            "fieldRef": {"fieldPath": "metadata.annotations['heartbeat.dev/context']"}}]}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
        {"name": "tools-socket", "emptyDir": {}},
        {"name": "workspace", "emptyDir": {}},
        {"name": "tools-tmp", "emptyDir": {}},
        {"name": "kube-api-access", "projected": {"sources": [
          {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
          {"configMap": {"name": "kube-root-ca.crt",
                         "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
          {"downwardAPI": {"items": [{"path": "namespace",
              "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]}}
      ]
    }
  })json");
}

struct HeartbeatPlan {
  std::string dir;
  LocalLaunch pod;
  const ContainerLaunch& runner() const { return pod.containers.at(0); }
  const ContainerLaunch& tools() const { return pod.containers.at(1); }
};

HeartbeatPlan plan_heartbeat_pod(Json pod = heartbeat_pod()) {
  Cluster cluster = full_cluster();
  ImageMap images = runner_images();
  PlanInputs in = cluster.inputs(images);
  in.pod_dir = "/state/pods/u-2";
  in.executable = [](const std::string& path) { return path == "/build/runner/heartbeat-tools"; };
  in.cluster_ca_pem = "EXECUTOR-CA";
  PlanResult result = plan_launch(pod, in);
  if (auto* problem = std::get_if<PlanProblem>(&result)) {
    ADD_FAILURE() << problem->reason << ": " << problem->message;
    return {in.pod_dir, {}};
  }
  return {in.pod_dir, std::get<LocalLaunch>(result)};
}

TEST(Plan, HeartbeatPodRunsBothContainersWithTheirOwnEnvAndCommand) {
  EXPECT_EQ(wants_service_account(heartbeat_pod()), "example-heartbeat");
  HeartbeatPlan p = plan_heartbeat_pod();
  ASSERT_EQ(p.pod.containers.size(), 2u);
  const std::string socket = p.dir + "/volumes/tools-socket/tools.sock";
  EXPECT_EQ(p.runner().argv, std::vector<std::string>{"/build/runner/heartbeat-runner"});
  EXPECT_EQ(p.tools().argv,
            (std::vector<std::string>{"/build/runner/heartbeat-tools", "--socket=" + socket}));

  auto runner = env_map(p.runner());
  EXPECT_EQ(runner["HEARTBEAT_API_KEY"], "sk-123");
  EXPECT_EQ(runner["HEARTBEAT_TOOLS_SOCKET"], socket);
  EXPECT_EQ(runner["HEARTBEAT_CONTEXT_PATH"], p.dir + "/volumes/context/context.json");
  EXPECT_EQ(runner["KUBECONFIG"], p.dir + "/containers/runner/kubeconfig");
  EXPECT_EQ(runner["HEARTBEAT_KUBECONFIG"], p.dir + "/containers/runner/kubeconfig");
  EXPECT_EQ(runner["TMPDIR"], p.dir + "/volumes/tmp");
  EXPECT_EQ(p.runner().working_dir, p.dir + "/containers/runner/work");

  auto tools = env_map(p.tools());
  for (const char* secret : {"HEARTBEAT_API_KEY", "KUBECONFIG", "HEARTBEAT_KUBECONFIG",
                             "HEARTBEAT_TOOLS_SOCKET", "HEARTBEAT_CONTEXT_PATH"}) {
    EXPECT_EQ(tools.count(secret), 0u) << secret;
  }
  EXPECT_EQ(tools["TMPDIR"], p.dir + "/volumes/tools-tmp");
  EXPECT_EQ(tools["HOME"], p.dir + "/containers/tools/work");
  EXPECT_EQ(p.tools().working_dir, p.dir + "/volumes/workspace");
  EXPECT_EQ(p.tools().termination_path, p.dir + "/containers/tools/termination-log");
  EXPECT_EQ(p.tools().log_path, p.dir + "/tools.log");
  EXPECT_EQ(p.runner().log_path, p.dir + "/runner.log");
}

TEST(Plan, EachContainerSeesOnlyTheVolumesItMounts) {
  HeartbeatPlan p = plan_heartbeat_pod();
  ASSERT_EQ(p.pod.containers.size(), 2u);
  const auto& runner = p.runner().rewrites;
  const auto& tools = p.tools().rewrites;
  EXPECT_EQ(rewrite_path("/etc/heartbeat/context.json", runner),
            p.dir + "/volumes/context/context.json");
  EXPECT_EQ(rewrite_path("/etc/heartbeat/context.json", tools), "/etc/heartbeat/context.json");
  EXPECT_EQ(rewrite_path("/var/run/secrets/kubernetes.io/serviceaccount/token", tools),
            "/var/run/secrets/kubernetes.io/serviceaccount/token");
  EXPECT_EQ(rewrite_path("/tmp/x", runner), p.dir + "/volumes/tmp/x");
  EXPECT_EQ(rewrite_path("/tmp/x", tools), p.dir + "/volumes/tools-tmp/x");
  EXPECT_EQ(rewrite_path("/dev/termination-log", runner),
            p.dir + "/containers/runner/termination-log");
  EXPECT_EQ(rewrite_path("/dev/termination-log", tools),
            p.dir + "/containers/tools/termination-log");
  EXPECT_EQ(rewrite_path("/workspace/a", runner), "/workspace/a");
  EXPECT_EQ(rewrite_path("/run/heartbeat-tools/tools.sock", runner),
            rewrite_path("/run/heartbeat-tools/tools.sock", tools));
}

TEST(Plan, ContainersRunAsTheirUsersAndOwnTheirFiles) {
  HeartbeatPlan p = plan_heartbeat_pod();
  ASSERT_EQ(p.pod.containers.size(), 2u);
  const RunAs& runner = p.runner().run_as;
  const RunAs& tools = p.tools().run_as;
  EXPECT_EQ(runner.uid, 65532);
  EXPECT_EQ(runner.gid, 65532);
  EXPECT_EQ(runner.groups, std::vector<int64_t>{65532});  // the fsGroup
  EXPECT_FALSE(runner.no_new_privs);
  EXPECT_EQ(tools.uid, 65533);
  EXPECT_EQ(tools.gid, 65533);
  EXPECT_EQ(tools.groups, std::vector<int64_t>{65532});
  EXPECT_TRUE(tools.no_new_privs);

  const Owner r{65532, 65532}, t{65533, 65533}, executor{}, fs_group{-1, 65532};
  std::map<std::string, std::pair<int, Owner>> dirs;
  for (const auto& d : p.pod.dirs) dirs[d.path] = {d.mode, d.owner};
  auto dir = [&](const std::string& sub) { return dirs.at(p.dir + sub); };
  using Expect = std::pair<int, Owner>;
  EXPECT_EQ(dir(""), (Expect{0711, executor}));
  EXPECT_EQ(dir("/volumes"), (Expect{0711, executor}));
  EXPECT_EQ(dir("/containers"), (Expect{0711, executor}));
  EXPECT_EQ(dir("/volumes/context"), (Expect{0700, r}));
  EXPECT_EQ(dir("/volumes/tmp"), (Expect{0700, r}));
  EXPECT_EQ(dir("/volumes/kube-api-access"), (Expect{0700, r}));
  EXPECT_EQ(dir("/volumes/tools-socket"), (Expect{02770, fs_group}));
  EXPECT_EQ(dir("/volumes/workspace"), (Expect{0700, t}));
  EXPECT_EQ(dir("/volumes/tools-tmp"), (Expect{0700, t}));
  EXPECT_EQ(dir("/containers/runner"), (Expect{0700, r}));
  EXPECT_EQ(dir("/containers/runner/work"), (Expect{0700, r}));
  EXPECT_EQ(dir("/containers/tools"), (Expect{0700, t}));
  // Parents come first, so they can be created in order.
  std::set<std::string> made = {p.pod.dirs.front().path};
  for (std::size_t i = 1; i < p.pod.dirs.size(); ++i) {
    const std::string& path = p.pod.dirs[i].path;
    EXPECT_EQ(made.count(path.substr(0, path.rfind('/'))), 1u) << path;
    made.insert(path);
  }

  std::map<std::string, std::pair<int, Owner>> files;
  for (const auto& f : p.pod.files) files[f.path] = {f.mode, f.owner};
  EXPECT_EQ(files.at(p.dir + "/containers/runner/termination-log"), (Expect{0600, r}));
  EXPECT_EQ(files.at(p.dir + "/containers/tools/termination-log"), (Expect{0600, t}));
  EXPECT_EQ(files.at(p.dir + "/containers/runner/kubeconfig"), (Expect{0600, r}));
  EXPECT_EQ(files.at(p.dir + "/volumes/kube-api-access/token"), (Expect{0600, r}));
  EXPECT_EQ(files.at(p.dir + "/volumes/context/context.json"), (Expect{0644, r}));
}

TEST(Plan, ServiceAccountFilesOnlyForTheContainerThatMountsThem) {
  HeartbeatPlan p = plan_heartbeat_pod();
  auto files = files_of(p.pod);
  const std::string sa = p.dir + "/volumes/kube-api-access/";
  EXPECT_EQ(files[sa + "token"].first, "tok");
  EXPECT_EQ(files[sa + "ca.crt"].first, "EXECUTOR-CA");  // kube-root-ca.crt is missing
  EXPECT_EQ(files[sa + "namespace"].first, "default");
  EXPECT_EQ(files[p.dir + "/containers/runner/kubeconfig"].first, "kubeconfig text");
  EXPECT_EQ(files.count(p.dir + "/containers/tools/kubeconfig"), 0u);
  EXPECT_EQ(files[p.dir + "/volumes/context/context.json"].first, "{\"kind\":\"ctx\"}");
  auto noted = [&](const std::string& text) {
    return std::any_of(p.pod.notes.begin(), p.pod.notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(noted("kube-root-ca.crt"));
  EXPECT_TRUE(noted("container tools: securityContext.readOnlyRootFilesystem"));

  // A published kube-root-ca.crt is used as it is.
  Cluster cluster = full_cluster();
  cluster.config_maps["kube-root-ca.crt"] = {{"data", {{"ca.crt", "PUBLISHED"}}}};
  ImageMap images = runner_images();
  PlanInputs in = cluster.inputs(images);
  auto l = std::get<LocalLaunch>(plan_launch(heartbeat_pod(), in));
  EXPECT_EQ(files_of(l)[in.pod_dir + "/volumes/kube-api-access/ca.crt"].first, "PUBLISHED");

  // Without automount and without a token volume, nobody gets a token.
  Json pod = heartbeat_pod();
  pod["spec"]["volumes"].erase(5);
  pod["spec"]["containers"][0]["volumeMounts"].erase(3);
  EXPECT_EQ(wants_service_account(pod), "");
}

TEST(Plan, AutomountGivesEveryContainerItsOwnKubeconfig) {
  Cluster cluster = full_cluster();
  ImageMap images = runner_images();
  Json pod = runner_pod();
  pod["spec"]["containers"].push_back(
      {{"name", "sidecar"}, {"image", "heartbeat-runner:local"}, {"args", {"--x"}}});
  PlanInputs in = cluster.inputs(images);
  auto l = std::get<LocalLaunch>(plan_launch(pod, in));
  ASSERT_EQ(l.containers.size(), 2u);
  EXPECT_EQ(env_map(l.containers[1])["KUBECONFIG"], in.pod_dir + "/containers/sidecar/kubeconfig");
  EXPECT_EQ(env_map(l.containers[1]).count("HEARTBEAT_API_KEY"), 0u);
  EXPECT_EQ(l.containers[1].argv,
            (std::vector<std::string>{"/build/runner/heartbeat-runner", "--x"}));
}

TEST(Plan, SharedVolumeWithoutFsGroupIsOpenAsKubernetesMakesIt) {
  Json pod = heartbeat_pod();
  pod["spec"]["securityContext"].erase("fsGroup");
  HeartbeatPlan p = plan_heartbeat_pod(pod);
  for (const auto& d : p.pod.dirs) {
    if (d.path == p.dir + "/volumes/tools-socket") {
      EXPECT_EQ(d.mode, 0777);
      EXPECT_EQ(d.owner, Owner{});
    }
  }
  ASSERT_EQ(p.pod.containers.size(), 2u);
  EXPECT_TRUE(p.tools().run_as.groups.empty());
}

TEST(Plan, RunAsFromContainerOverPod) {
  Json pod_sc = {{"runAsUser", 1000},
                 {"runAsGroup", 2000},
                 {"fsGroup", 3000},
                 {"supplementalGroups", {4000, 3000}}};
  RunAs pod_only = run_as_for(pod_sc, Json());
  EXPECT_EQ(pod_only.uid, 1000);
  EXPECT_EQ(pod_only.gid, 2000);
  EXPECT_EQ(pod_only.groups, (std::vector<int64_t>{3000, 4000}));
  EXPECT_EQ(pod_only.owner(), (Owner{1000, 2000}));
  RunAs own = run_as_for(pod_sc, {{"runAsUser", 7}, {"allowPrivilegeEscalation", false}});
  EXPECT_EQ(own.uid, 7);
  EXPECT_EQ(own.gid, 2000);
  EXPECT_TRUE(own.no_new_privs);
  RunAs uid_only = run_as_for(Json(), {{"runAsUser", 9}});
  EXPECT_EQ(uid_only.gid, 9);  // not the host's root group
  RunAs none = run_as_for(Json(), Json());
  EXPECT_FALSE(none.uid);
  EXPECT_EQ(none.owner(), Owner{});
  EXPECT_FALSE(run_as_for(Json(), {{"allowPrivilegeEscalation", true}}).no_new_privs);
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
    cluster.secrets["example-llm"] = {{"data", {{"api-key", "sk-123 not base64!"}}}};
    auto p = std::get<PlanProblem>(plan_launch(runner_pod(), cluster.inputs(images)));
    EXPECT_TRUE(p.fatal);
    EXPECT_EQ(p.reason, "CreateContainerConfigError");
    EXPECT_NE(p.message.find("key api-key is not valid base64"), std::string::npos) << p.message;
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
    pod["spec"]["initContainers"] = pod["spec"]["containers"];
    auto p = std::get<PlanProblem>(plan_launch(pod, cluster.inputs(images)));
    EXPECT_TRUE(p.fatal);
    EXPECT_EQ(p.reason, "UnsupportedByLocalKubelet");
    EXPECT_NE(p.message.find("initContainers"), std::string::npos);
  }
  {
    Cluster cluster = full_cluster();
    Json pod = runner_pod();
    pod["spec"]["containers"].push_back(pod["spec"]["containers"][0]);
    auto p = std::get<PlanProblem>(plan_launch(pod, cluster.inputs(images)));
    EXPECT_TRUE(p.fatal);
    EXPECT_NE(p.message.find("unique"), std::string::npos);
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

TEST(Plan, ProblemsOfOneContainerNameIt) {
  ImageMap images = runner_images();
  {
    Cluster cluster = full_cluster();
    Json pod = heartbeat_pod();
    pod["spec"]["containers"][1]["image"] = "custom-tools:1";
    auto p = std::get<PlanProblem>(plan_launch(pod, cluster.inputs(images)));
    EXPECT_FALSE(p.fatal);
    EXPECT_EQ(p.container, "tools");
    EXPECT_EQ(p.reason, "ErrImagePull");
  }
  {
    Cluster cluster = full_cluster();
    Json pod = heartbeat_pod();
    pod["spec"]["containers"][1]["securityContext"]["runAsUser"] = 0;
    auto p = std::get<PlanProblem>(plan_launch(pod, cluster.inputs(images)));
    EXPECT_TRUE(p.fatal);
    EXPECT_EQ(p.container, "tools");
    EXPECT_NE(p.message.find("non-root"), std::string::npos);
  }
  {
    Cluster cluster = full_cluster();
    Json pod = heartbeat_pod();
    auto in = cluster.inputs(images);
    in.service_account_token.reset();
    auto p = std::get<PlanProblem>(plan_launch(pod, in));
    EXPECT_FALSE(p.fatal);
    EXPECT_EQ(p.reason, "ContainerCreating");
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
  auto planned = std::get<LocalLaunch>(plan_launch(pod, in));
  const ContainerLaunch& l = planned.containers.at(0);
  const std::string dir = in.pod_dir;
  EXPECT_EQ(l.argv,
            (std::vector<std::string>{"/bin/sh", "-c",
                                      "cat /etc/heartbeat/context.json > " + dir + "/volumes/tmp/x",
                                      "--out=" + dir + "/volumes/tmp/y"}));
  EXPECT_EQ(l.working_dir, dir + "/volumes/tmp");
  EXPECT_EQ(env_map(l)["TMPDIR"], dir + "/volumes/tmp");
  EXPECT_EQ(env_map(l).count("KUBECONFIG"), 0u);
  EXPECT_EQ(files_of(planned)[dir + "/volumes/context/context.json"].first, "example-1");

  // A workingDir outside the mounts is made below the container's work dir.
  c["workingDir"] = "/app/src";
  planned = std::get<LocalLaunch>(plan_launch(pod, in));
  EXPECT_EQ(planned.containers.at(0).working_dir, dir + "/containers/runner/work/app/src");
  EXPECT_EQ(planned.dirs.back().path, dir + "/containers/runner/work/app/src");
}

TEST(Kubeconfig, TokenKubeconfigLoadsWithOurOwnParser) {
  const std::string text =
      render_token_kubeconfig("https://127.0.0.1:6443", "PEM\n", false, "tok.en-1", "default");
  kube::ClusterConfig config = kube::parse_kubeconfig(text, "/x/kubeconfig").or_throw();
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

ContainerState waiting(const std::string& name, const std::string& reason) {
  ContainerState c;
  c.info = {name, "heartbeat-runner:local", ""};
  c.reason = reason;
  return c;
}
ContainerState running(const std::string& name, const std::string& since) {
  ContainerState c;
  c.info = {name, "heartbeat-runner:local", "local://n/" + name};
  c.phase = ContainerPhase::kRunning;
  c.started_at = since;
  return c;
}
ContainerState terminated(const std::string& name, int code, const std::string& message = "") {
  ContainerState c = running(name, "s");
  c.phase = ContainerPhase::kTerminated;
  c.termination = {{code, std::nullopt}, "", message, "s", "f"};
  return c;
}

TEST(Status, PodPhaseFromEveryContainer) {
  EXPECT_EQ(pod_phase({}), "Pending");
  EXPECT_EQ(pod_phase({waiting("runner", "ErrImagePull"), waiting("tools", "ContainerCreating")}),
            "Pending");
  EXPECT_EQ(pod_phase({running("runner", "t"), waiting("tools", "ContainerCreating")}), "Pending");
  EXPECT_EQ(pod_phase({running("runner", "t"), running("tools", "t")}), "Running");
  EXPECT_EQ(pod_phase({terminated("runner", 0), running("tools", "t")}), "Running");
  EXPECT_EQ(pod_phase({terminated("runner", 1), running("tools", "t")}), "Running");
  EXPECT_EQ(pod_phase({terminated("runner", 0), terminated("tools", 0)}), "Succeeded");
  EXPECT_EQ(pod_phase({terminated("runner", 0), terminated("tools", 143)}), "Failed");
  EXPECT_EQ(pod_phase({terminated("runner", 2)}), "Failed");
}

TEST(Status, PatchesLookLikeAKubeletsStatus) {
  Json both = status_patch({running("runner", "t0"), running("tools", "t0")}, "t0", "t1")["status"];
  EXPECT_EQ(both["phase"], "Running");
  EXPECT_EQ(both["podIP"], "127.0.0.1");
  EXPECT_EQ(both["startTime"], "t0");
  ASSERT_EQ(both["containerStatuses"].size(), 2u);
  EXPECT_EQ(both["containerStatuses"][0]["name"], "runner");
  EXPECT_EQ(both["containerStatuses"][1]["name"], "tools");
  EXPECT_EQ(both["containerStatuses"][1]["containerID"], "local://n/tools");
  EXPECT_EQ(both["containerStatuses"][0]["state"]["running"]["startedAt"], "t0");
  EXPECT_EQ(both["containerStatuses"][0]["ready"], true);
  EXPECT_EQ(both["conditions"][1]["type"], "Ready");
  EXPECT_EQ(both["conditions"][1]["status"], "True");

  // One ended (its own message), the other still runs: Running, not ready.
  Json half =
      status_patch({terminated("runner", 0, "{\"r\":1}"), running("tools", "t0")}, "t0", "t1");
  const Json& status = half["status"];
  EXPECT_EQ(status["phase"], "Running");
  EXPECT_EQ(status["conditions"][1]["status"], "False");
  EXPECT_EQ(status["conditions"][1]["reason"], "ContainersNotReady");
  const Json& term = status["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(term["exitCode"], 0);
  EXPECT_EQ(term["reason"], "Completed");
  EXPECT_EQ(term["message"], "{\"r\":1}");
  EXPECT_EQ(term["containerID"], "local://n/runner");
  EXPECT_FALSE(status["containerStatuses"][1]["state"].contains("terminated"));

  ContainerState killed = terminated("tools", 143);
  killed.termination.exit.signal = SIGTERM;
  Json done = status_patch({terminated("runner", 0), killed}, "t0", "t2")["status"];
  EXPECT_EQ(done["phase"], "Failed");
  EXPECT_EQ(done["conditions"][0]["reason"], "PodCompleted");
  const Json& tools = done["containerStatuses"][1]["state"]["terminated"];
  EXPECT_EQ(tools["exitCode"], 143);
  EXPECT_EQ(tools["signal"], SIGTERM);
  EXPECT_EQ(tools["reason"], "Error");
  EXPECT_FALSE(done["containerStatuses"][0]["state"]["terminated"].contains("signal"));

  ContainerState failed = terminated("tools", 128);
  failed.termination.reason = "StartError";
  EXPECT_EQ(status_patch({terminated("runner", 0), failed}, "t0",
                         "t2")["status"]["containerStatuses"][1]["state"]["terminated"]["reason"],
            "StartError");

  Json pending =
      status_patch({waiting("runner", "ContainerCreating"), waiting("tools", "ErrImagePull")}, "",
                   "now")["status"];
  EXPECT_EQ(pending["phase"], "Pending");
  EXPECT_FALSE(pending.contains("podIP"));
  EXPECT_FALSE(pending.contains("startTime"));
  EXPECT_EQ(pending["containerStatuses"][1]["state"]["waiting"]["reason"], "ErrImagePull");
  EXPECT_EQ(pending["containerStatuses"][1]["ready"], false);
}

TEST(Status, TerminationFromAnEarlierStatus) {
  ContainerState c = terminated("runner", 143, "bye");
  c.termination.exit.signal = SIGTERM;
  const Json written = status_patch({c}, "s", "f")["status"]["containerStatuses"][0];
  Termination t = termination_from_json(written["state"]["terminated"]);
  EXPECT_EQ(t.exit.exit_code, 143);
  EXPECT_EQ(t.exit.signal, SIGTERM);
  EXPECT_EQ(t.reason, "Error");
  EXPECT_EQ(t.message, "bye");
  EXPECT_EQ(t.started_at, "s");
  EXPECT_EQ(t.finished_at, "f");
  EXPECT_EQ(termination_from_json(Json()).exit.exit_code, 0);
  EXPECT_EQ(termination_from_json({{"exitCode", nullptr}, {"reason", 3}}).reason, "");
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
