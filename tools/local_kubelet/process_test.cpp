// Local processes: exit codes, signals, logs, env, working dir, the session
// sweep that catches grandchildren in their own process group, and (as root)
// two containers of one Pod as different users that cannot reach each other.
#include "tools/local_kubelet/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "tools/local_kubelet/launch_plan.h"
#include "tools/local_kubelet/pod_files.h"
#include "tools/local_kubelet/pod_status.h"

namespace hb::local_kubelet {
namespace {

namespace fs = std::filesystem;

// Polls `done` until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& done,
                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Whether a live process of session `sid` runs in a process group of its own.
bool session_has_another_group(pid_t sid) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    if (!std::getline(stat, text)) continue;
    const auto paren = text.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(text.substr(paren + 1));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    if (!(fields >> state >> ppid >> pgrp >> session)) continue;
    if (session == sid && pgrp != sid && state != "Z") return true;
  }
  return false;
}

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hb-lk-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // Other users (the containers' ids) pass through, whatever our umask.
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  }
  void TearDown() override { fs::remove_all(dir_); }

  SpawnSpec shell(const std::string& script) {
    return {{"sh", "-c", script}, {{"PATH", "/usr/bin:/bin"}, {"GREETING", "hi"}},
            dir_.string(),        (dir_ / "log").string(),
            std::nullopt,         false};
  }
  int wait_for(pid_t pid) {
    for (int i = 0; i < 200; ++i) {
      if (auto status = try_wait(pid)) return *status;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ADD_FAILURE() << "pid " << pid << " did not exit";
    return -1;
  }
  fs::path dir_;
};

TEST_F(ProcessTest, ExitCodeLogEnvAndWorkingDir) {
  Spawned p = spawn(shell("echo $GREETING; pwd; echo err >&2; exit 3"));
  ASSERT_GT(p.pid, 0) << p.error;
  ExitStatus exit = exit_from_wait_status(wait_for(p.pid));
  EXPECT_EQ(exit.exit_code, 3);
  EXPECT_FALSE(exit.signal);
  EXPECT_EQ(read_tail((dir_ / "log").string(), 1000), "hi\n" + dir_.string() + "\nerr\n");
}

TEST_F(ProcessTest, MissingProgramAndBadWorkingDirAreStartErrors) {
  SpawnSpec spec = shell("true");
  spec.argv[0] = "no-such-program-hb";
  EXPECT_NE(spawn(spec).error.find("executable file not found in $PATH"), std::string::npos);
  spec = shell("true");
  spec.working_dir = (dir_ / "missing").string();
  Spawned p = spawn(spec);
  EXPECT_EQ(p.pid, -1);
  EXPECT_NE(p.error.find("No such file"), std::string::npos) << p.error;
}

TEST_F(ProcessTest, SignalGroupAndSessionSweep) {
  // The grandchild moves to its own process group, as the runner's shell tool does.
  Spawned p = spawn(shell("perl -e 'setpgrp(0,0); sleep 60' & exec sleep 60"));
  ASSERT_GT(p.pid, 0) << p.error;
  // perl has moved to a group of its own.
  ASSERT_TRUE(eventually([&] { return session_has_another_group(p.pid); }));
  signal_group(p.pid, SIGTERM);
  ExitStatus exit = exit_from_wait_status(wait_for(p.pid));
  EXPECT_EQ(exit.exit_code, 128 + SIGTERM);
  EXPECT_EQ(exit.signal, SIGTERM);
  // perl's sleep is in another group of the same session: only the sweep gets it.
  EXPECT_GE(kill_session(p.pid), 1);
  // Gone (or a zombie) once SIGKILL is delivered: the sweep finds no one left.
  EXPECT_TRUE(eventually([&] { return kill_session(p.pid) == 0; }));
}

TEST_F(ProcessTest, MaterializeAndRemoveSecrets) {
  LocalLaunch l;
  const std::string pod = (dir_ / "pods" / "u-1").string();
  l.dirs = {{pod, kTraverseOnlyDirMode, {}},
            {pod + "/volumes", kTraverseOnlyDirMode, {}},
            {pod + "/volumes/s", kPrivateDirMode, {}},
            {pod + "/containers", kTraverseOnlyDirMode, {}},
            {pod + "/containers/c", kPrivateDirMode, {}}};
  l.files = {{pod + "/volumes/s/token", "tok", 0600, {}},
             {pod + "/containers/c/kubeconfig", "k", 0600, {}},
             {pod + "/containers/c/termination-log", "", 0600, {}}};
  materialize(l);
  EXPECT_EQ(read_head(pod + "/volumes/s/token", 100), "tok");
  EXPECT_EQ(fs::status(pod + "/volumes/s/token").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(static_cast<int>(fs::status(pod).permissions() & fs::perms::all), 0711);
  remove_secrets(pod);
  EXPECT_FALSE(fs::exists(pod + "/volumes"));
  EXPECT_FALSE(fs::exists(pod + "/containers/c/kubeconfig"));
  EXPECT_TRUE(fs::exists(pod + "/containers/c/termination-log"));  // kept for post-mortems
}

TEST_F(ProcessTest, ReadsNoSymlinkNorFifo) {
  std::ofstream(dir_ / "target") << "secret";
  fs::create_symlink(dir_ / "target", dir_ / "link");
  EXPECT_EQ(read_head((dir_ / "target").string(), 100), "secret");
  EXPECT_EQ(read_head((dir_ / "link").string(), 100), "");
  EXPECT_EQ(read_tail((dir_ / "link").string(), 100), "");
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(read_head((dir_ / "fifo").string(), 100), "");  // and does not block
}

TEST_F(ProcessTest, NoNewPrivileges) {
  SpawnSpec spec = shell("grep NoNewPrivs /proc/self/status");
  spec.no_new_privs = true;
  Spawned p = spawn(spec);
  ASSERT_GT(p.pid, 0) << p.error;
  EXPECT_EQ(exit_from_wait_status(wait_for(p.pid)).exit_code, 0);
  EXPECT_EQ(read_tail((dir_ / "log").string(), 1000), "NoNewPrivs:\t1\n");
}

TEST_F(ProcessTest, SwitchingUsersNeedsRoot) {
  if (::geteuid() == 0) GTEST_SKIP() << "as root the switch succeeds (see the tests below)";
  SpawnSpec spec = shell("true");
  spec.identity = Identity{65533, 65533, {65532}};
  Spawned p = spawn(spec);
  EXPECT_EQ(p.pid, -1);
  EXPECT_NE(p.error.find("setgroups"), std::string::npos) << p.error;
  EXPECT_NE(p.error.find("must run as root"), std::string::npos) << p.error;
}

class RootProcessTest : public ProcessTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "switching users needs root (CI runs the tests as root)";
    ProcessTest::SetUp();
  }
};

TEST_F(RootProcessTest, RunsAsTheUserWithItsGroups) {
  SpawnSpec spec = shell("id -u; id -g; id -G; echo made > $PWD/file");
  const fs::path work = dir_ / "work";
  fs::create_directories(work);
  ASSERT_EQ(::chown(work.c_str(), 65533, 65533), 0);
  spec.working_dir = work.string();
  spec.identity = Identity{65533, 65533, {65532, 4000}};
  Spawned p = spawn(spec);
  ASSERT_GT(p.pid, 0) << p.error;
  EXPECT_EQ(exit_from_wait_status(wait_for(p.pid)).exit_code, 0);
  // The kernel keeps supplementary groups sorted.
  EXPECT_EQ(read_tail((dir_ / "log").string(), 1000), "65533\n65533\n65533 4000 65532\n");
  struct stat st {};
  ASSERT_EQ(::stat((work / "file").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65533u);
  EXPECT_EQ(st.st_mode & 0777, 0644u);  // a container's umask, not ours
}

TEST_F(RootProcessTest, UnreachableWorkingDirIsAStartErrorNamingTheUser) {
  const fs::path closed = dir_ / "closed";
  fs::create_directories(closed / "work");
  fs::permissions(closed, fs::perms::owner_all);  // root's, 0700
  SpawnSpec spec = shell("true");
  spec.working_dir = (closed / "work").string();
  spec.identity = Identity{65533, 65533, {}};
  Spawned p = spawn(spec);
  EXPECT_EQ(p.pid, -1);
  EXPECT_NE(p.error.find("uid 65533"), std::string::npos) << p.error;
  EXPECT_NE(p.error.find("Permission denied"), std::string::npos) << p.error;
  EXPECT_NE(p.error.find("searchable"), std::string::npos) << p.error;
}

// Two containers of one Pod, planned, materialized and started as the
// executor does: A (uid 65532, the runner's place) holds a secret in its env,
// its volume, its token and its termination message; B (uid 65533, the tools'
// place) tries to reach each of them, and both meet in the fsGroup dir.
Json isolation_pod() {
  // Scripts are args: $(VAR) expansion applies, and $$$$ is the shell's $$.
  const std::string a_script = R"sh(
    echo sk-in-a-file > "$MINE/secret"
    tr '\0' '\n' < /proc/$$$$/environ | grep -q '^SECRET=sk-secret$' && echo "A: own environ"
    [ "$(cat "$TOKEN")" = tok ] && echo "A: own token"
    [ -s "$KUBECONFIG" ] && echo "A: own kubeconfig"
    echo $$$$ > "$SHARED/a.tmp" && mv "$SHARED/a.tmp" "$SHARED/a.pid"
    i=0; while [ ! -f "$SHARED/b.done" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
    printf 'a saw %s' "$(cat "$SHARED/b.done")" > "$TERM_LOG")sh";
  const std::string b_script = R"sh(
    i=0; while [ ! -f "$SHARED/a.pid" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
    pid=$(cat "$SHARED/a.pid")
    try() { if cat "$2" > /dev/null 2>&1; then echo "READ $1"; else echo "DENIED $1"; fi; }
    try environ /proc/$pid/environ
    try secret "$A_SECRET"
    try token "$A_TOKEN"
    try kubeconfig "$A_KUBECONFIG"
    try termination-log "$A_TERM"
    if (echo forged > "$A_TERM") 2> /dev/null; then echo "WROTE termination-log"; else echo "DENIED write"; fi
    if ls "$A_POD" > /dev/null 2>&1; then echo "LISTED pod"; else echo "DENIED list"; fi
    echo "id $(id -u) $(id -G)"
    grep NoNewPrivs /proc/self/status
    echo from-b > "$SHARED/b.tmp" && mv "$SHARED/b.tmp" "$SHARED/b.done" && echo "B: shared ok")sh";
  Json pod = Json::parse(R"json({
    "metadata": {"name": "iso", "namespace": "default", "uid": "u-iso"},
    "spec": {
      "automountServiceAccountToken": false,
      "serviceAccountName": "iso",
      "securityContext": {"runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532},
      "containers": [{
        "name": "a", "image": "shell:1", "command": ["/bin/sh", "-c"],
        "env": [{"name": "SECRET", "value": "sk-secret"},
                {"name": "MINE", "value": "/private"},
                {"name": "SHARED", "value": "/run/shared"},
                {"name": "TOKEN", "value": "/var/run/secrets/kubernetes.io/serviceaccount/token"},
                {"name": "TERM_LOG", "value": "/dev/termination-log"}],
        "volumeMounts": [{"name": "private", "mountPath": "/private"},
                         {"name": "shared", "mountPath": "/run/shared"},
                         {"name": "sa", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
      }, {
        "name": "b", "image": "shell:1", "command": ["/bin/sh", "-c"],
        "securityContext": {"runAsUser": 65533, "runAsGroup": 65533,
                            "allowPrivilegeEscalation": false},
        "workingDir": "/workspace",
        "env": [{"name": "SHARED", "value": "/run/shared"}],
        "volumeMounts": [{"name": "shared", "mountPath": "/run/shared"},
                         {"name": "workspace", "mountPath": "/workspace"}]
      }],
      "volumes": [{"name": "private", "emptyDir": {}}, {"name": "shared", "emptyDir": {}},
                  {"name": "workspace", "emptyDir": {}},
                  {"name": "sa", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]
    }
  })json");
  pod["spec"]["containers"][0]["args"] = {a_script};
  pod["spec"]["containers"][1]["args"] = {b_script};
  return pod;
}

TEST_F(RootProcessTest, TwoContainersAsDifferentUsersCannotReachEachOther) {
  ImageMap images;
  images.add("shell=/bin/sh");
  PlanInputs in;
  in.pod_dir = (dir_ / "pods" / "u-iso").string();
  in.images = &images;
  in.node_name = "n";
  in.config_map = [](const std::string&) { return std::nullopt; };
  in.secret = [](const std::string&) { return std::nullopt; };
  in.service_account_token = "tok";
  in.service_account_kubeconfig = "kubeconfig text";
  PlanResult result = plan_launch(isolation_pod(), in);
  ASSERT_TRUE(std::holds_alternative<LocalLaunch>(result)) << std::get<PlanProblem>(result).message;
  const LocalLaunch& l = std::get<LocalLaunch>(result);
  ASSERT_EQ(l.containers.size(), 2u);
  materialize(l);
  const ContainerLaunch &a = l.containers[0], &b = l.containers[1];
  SpawnSpec b_spec = spawn_spec_for(b);
  // B is told where A's things are: paths alone must not be enough.
  b_spec.env.insert(b_spec.env.end(), {{"A_SECRET", in.pod_dir + "/volumes/private/secret"},
                                       {"A_TOKEN", in.pod_dir + "/volumes/sa/token"},
                                       {"A_KUBECONFIG", in.pod_dir + "/containers/a/kubeconfig"},
                                       {"A_TERM", a.termination_path},
                                       {"A_POD", in.pod_dir}});
  Spawned a_proc = spawn(spawn_spec_for(a));
  ASSERT_GT(a_proc.pid, 0) << a_proc.error;
  Spawned b_proc = spawn(b_spec);
  ASSERT_GT(b_proc.pid, 0) << b_proc.error;
  EXPECT_EQ(exit_from_wait_status(wait_for(b_proc.pid)).exit_code, 0);
  EXPECT_EQ(exit_from_wait_status(wait_for(a_proc.pid)).exit_code, 0);

  const std::string a_log = read_tail(a.log_path, 10000), b_log = read_tail(b.log_path, 10000);
  for (const char* line : {"A: own environ", "A: own token", "A: own kubeconfig"}) {
    EXPECT_NE(a_log.find(line), std::string::npos) << line << " in\n" << a_log;
  }
  for (const char* line : {"DENIED environ", "DENIED secret", "DENIED token", "DENIED kubeconfig",
                           "DENIED termination-log", "DENIED write", "DENIED list",
                           "id 65533 65533 65532", "NoNewPrivs:\t1", "B: shared ok"}) {
    EXPECT_NE(b_log.find(line), std::string::npos) << line << " in\n" << b_log;
  }
  EXPECT_EQ(read_head(a.termination_path, 1000), "a saw from-b");
  // What B was denied exists: root reads it.
  EXPECT_EQ(read_head(in.pod_dir + "/volumes/private/secret", 100), "sk-in-a-file\n");
}

}  // namespace
}  // namespace hb::local_kubelet
