// Local processes: exit codes, signals, logs, env, working dir, and the
// session sweep that catches grandchildren in their own process group.
#include "tests/e2e/local_kubelet/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/e2e/local_kubelet/pod_files.h"
#include "tests/e2e/local_kubelet/pod_status.h"

namespace hb::local_kubelet {
namespace {

namespace fs = std::filesystem;

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hb-lk-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  SpawnSpec shell(const std::string& script) {
    return {{"sh", "-c", script},
            {{"PATH", "/usr/bin:/bin"}, {"GREETING", "hi"}},
            dir_.string(),
            (dir_ / "log").string()};
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
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  signal_group(p.pid, SIGTERM);
  ExitStatus exit = exit_from_wait_status(wait_for(p.pid));
  EXPECT_EQ(exit.exit_code, 128 + SIGTERM);
  EXPECT_EQ(exit.signal, SIGTERM);
  // perl's sleep is in another group of the same session: only the sweep gets it.
  EXPECT_GE(kill_session(p.pid), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(kill_session(p.pid), 0);
}

TEST_F(ProcessTest, MaterializeAndRemoveSecrets) {
  LocalLaunch l;
  const std::string pod = (dir_ / "pod").string();
  l.dirs = {pod + "/volumes/tmp"};
  l.files = {{pod + "/volumes/s/token", "tok", 0600}, {pod + "/kubeconfig", "k", 0600}};
  materialize(pod, l);
  EXPECT_EQ(read_head(pod + "/volumes/s/token", 100), "tok");
  EXPECT_EQ(fs::status(pod + "/volumes/s/token").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  remove_secrets(pod);
  EXPECT_FALSE(fs::exists(pod + "/volumes"));
  EXPECT_FALSE(fs::exists(pod + "/kubeconfig"));
}

}  // namespace
}  // namespace hb::local_kubelet
