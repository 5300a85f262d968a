// The heartbeat-runner binary as a Job runs it: env, context file, exit code,
// termination message, JSON lines on stdout. The performance figures (start
// to first model request, peak RSS, per-step overhead) are bench/runner's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "api/exit_codes.h"
#include "api/rfc3339.h"
#include "runner/limits.h"
#include "tests/fakes/fake_model_server.h"

extern char** environ;

namespace hb::runner {
namespace {

using fakes::FakeModelServer;
using nlohmann::json;
using namespace std::chrono_literals;

struct ProcessRun {
  int exit_code = -1;
  long max_rss_kib = 0;
  std::chrono::steady_clock::time_point started;
  std::string stdout_text;
  std::string termination;
};

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hb-proc-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    context_ = {
        {"agent", {{"name", "bench"}, {"namespace", "default"}, {"type", "react_agent"}}},
        {"model", {{"provider", "openai"}, {"model", "fake"}, {"baseURL", server_.url() + "/v1"}}},
        {"heartbeat", {{"prompt", "Do ten steps."}}},
        {"run",
         {{"name", "bench-1"},
          {"deadline", api::format_rfc3339_millis(std::chrono::system_clock::now() + 10min)}}}};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // after_spawn runs while the runner does (e.g. to signal it).
  ProcessRun run_binary(const std::function<void(pid_t)>& after_spawn = nullptr) {
    std::ofstream(dir_ / "context.json") << context_.dump();
    std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      std::string item(*e);
      if (item.rfind("KUBERNETES_", 0) == 0 || item.rfind("HEARTBEAT_", 0) == 0) continue;
      env.push_back(item);
    }
    env.push_back("HEARTBEAT_API_KEY=sk-process-secret");
    env.push_back("HEARTBEAT_CONTEXT_PATH=" + (dir_ / "context.json").string());
    env.push_back("HEARTBEAT_TERMINATION_PATH=" + (dir_ / "termination-log").string());
    env.insert(env.end(), extra_env_.begin(), extra_env_.end());
    std::vector<char*> envp;
    for (auto& item : env) envp.push_back(item.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::string binary = HB_RUNNER_BINARY;
    char* argv[] = {binary.data(), nullptr};
    ProcessRun run;
    run.started = std::chrono::steady_clock::now();
    pid_t pid;
    EXPECT_EQ(posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv, envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    if (after_spawn) after_spawn(pid);
    int status = 0;
    rusage usage{};
    ::wait4(pid, &status, 0, &usage);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    run.max_rss_kib = usage.ru_maxrss;
    std::stringstream text, term;
    text << std::ifstream(out).rdbuf();
    run.stdout_text = text.str();
    term << std::ifstream(dir_ / "termination-log").rdbuf();
    run.termination = term.str();
    return run;
  }

  // The Pod's second container: a heartbeat-tools server beside the runner.
  pid_t start_tools_server() {
    const std::string socket = (dir_ / "tools.sock").string();
    std::filesystem::create_directories(dir_ / "work");
    std::vector<std::string> args = {HB_TOOLS_BINARY, "--socket=" + socket,
                                     "--workdir=" + (dir_ / "work").string()};
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (dir_ / "tools.log").string();
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    EXPECT_EQ(posix_spawn(&pid, HB_TOOLS_BINARY, &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    extra_env_.push_back("HEARTBEAT_TOOLS_SOCKET=" + socket);
    return pid;
  }
  // The server's exit code once it ended by itself, or -1 (then it is killed).
  static int exit_code_within(pid_t pid, std::chrono::milliseconds timeout) {
    int status = 0;
    for (auto until = std::chrono::steady_clock::now() + timeout;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(20ms)) {
      if (::waitpid(pid, &status, WNOHANG) == pid)
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }

  FakeModelServer server_;
  std::filesystem::path dir_;
  json context_;
  std::vector<std::string> extra_env_;
};

TEST_F(ProcessTest, TenStepRun) {
  const pid_t tools = start_tools_server();
  for (int i = 0; i < 9; ++i) {
    server_.push(FakeModelServer::openai_tool_calls(
        {{"c" + std::to_string(i), "shell",
          R"({"command":"echo step )" + std::to_string(i) + R"("})"}}));
  }
  server_.push(FakeModelServer::openai_text("ten steps done"));
  ProcessRun run = run_binary();
  EXPECT_EQ(run.exit_code, api::kExitFinished);
  auto result = json::parse(run.termination);
  EXPECT_EQ(result["stopReason"], "completed");
  EXPECT_EQ(result["usage"]["iterations"], 10);
  EXPECT_LE(run.termination.size(), api::kTerminationMessageBytesMax);
  std::istringstream lines(run.stdout_text);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count)
    ASSERT_TRUE(json::accept(line)) << line;
  EXPECT_GT(count, 20);
  EXPECT_EQ(run.stdout_text.find("sk-process-secret"), std::string::npos);
  auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 10u);
  EXPECT_EQ(requests[0].header("authorization"), "Bearer sk-process-secret");
  // The shell tool never sees the key.
  EXPECT_EQ(requests[9].body.find("sk-process-secret"), std::string::npos);
  // The commands ran in the tools server, and their output reached the model.
  EXPECT_NE(requests[9].body.find("step 8"), std::string::npos);
  // The runner's exit closed its lifeline: the server ended too, so a Pod completes.
  EXPECT_EQ(exit_code_within(tools, 5s), 0);
}

TEST_F(ProcessTest, TheKeyIsNotInTheRunnersEnvironmentBlock) {
  server_.push({200, {}, "", 0ms, true});  // hangs until the server stops
  std::string environ_text;
  ProcessRun run = run_binary([&](pid_t pid) {
    for (int i = 0; i < 500 && server_.requests().empty(); ++i) std::this_thread::sleep_for(10ms);
    // What another process of the user (or root) reads: the kernel's copy.
    std::stringstream text;
    text << std::ifstream("/proc/" + std::to_string(pid) + "/environ").rdbuf();
    environ_text = text.str();
    ::kill(pid, SIGTERM);
  });
  EXPECT_EQ(run.exit_code, api::kExitCancelled);
  ASSERT_FALSE(server_.requests().empty());
  ASSERT_EQ(server_.requests()[0].header("authorization"), "Bearer sk-process-secret");
  if (::geteuid() == 0) {
    // root may read a non-dumpable process's environ: the block must be clean.
    EXPECT_NE(environ_text.find("HEARTBEAT_CONTEXT_PATH="), std::string::npos);
  }
  EXPECT_EQ(environ_text.find("sk-process-secret"), std::string::npos);
}

TEST_F(ProcessTest, BadContextExitsWithTheConfigCode) {
  context_["model"]["provider"] = "palm";
  ProcessRun run = run_binary();
  EXPECT_EQ(run.exit_code, api::kExitConfigError);
  EXPECT_EQ(json::parse(run.termination)["stopReason"], "config_error");
}

TEST_F(ProcessTest, ProviderFailureExitsWithTheProviderCode) {
  server_.push(FakeModelServer::error(403, R"({"error":{"message":"forbidden"}})"));
  ProcessRun run = run_binary();
  EXPECT_EQ(run.exit_code, api::kExitProviderError);
}

}  // namespace
}  // namespace hb::runner

namespace hb::runner {
namespace {

TEST_F(ProcessTest, SigtermDuringAModelCallWritesTheResult) {
  server_.push({200, {}, "", 0ms, true});  // hangs until the server stops
  ProcessRun run = run_binary([this](pid_t pid) {
    for (int i = 0; i < 500 && server_.requests().empty(); ++i) std::this_thread::sleep_for(10ms);
    ::kill(pid, SIGTERM);
  });
  EXPECT_EQ(run.exit_code, api::kExitCancelled);
  ASSERT_FALSE(run.termination.empty());
  EXPECT_EQ(json::parse(run.termination)["stopReason"], "cancelled");
}

}  // namespace
}  // namespace hb::runner
