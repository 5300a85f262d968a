// The tools server (the real heartbeat-tools binary) and the runner's client
// of it: commands run and are bounded, every process a call leaves is killed
// (setsid and double-forked ones too), hostile requests and replies are
// refused without a crash, and the lifeline ends the server.
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/exit_codes.h"
#include "runner/agent_loop.h"
#include "runner/stop_rules.h"
#include "runner/tool_specs.h"
#include "runner/toolbox.h"
#include "runner/tools/process_tree.h"
#include "runner/tools/protocol.h"
#include "runner/tools/unix_socket.h"
#include "runner/tools_client.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/scripted_model.h"

namespace hb::runner {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;
using tools::connect_unix;

// Processes (any owner) whose command line contains `needle`.
int processes_with(const std::string& needle) {
  int found = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::stringstream text;
    text << in.rdbuf();
    std::string cmdline = text.str();
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) ++found;
  }
  return found;
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto until = Steady::now() + timeout;
  while (Steady::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

class ToolsServer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hb-tools-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(dir_ / "work");
    socket_ = (dir_ / "t.sock").string();
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    fs::remove_all(dir_);
  }
  // wait_for_socket false: the server may already be gone again by the
  // time the test looks (it removes its socket when it ends).
  void start(const std::string& lifeline_wait = "30", bool wait_for_socket = true) {
    std::vector<std::string> args = {HB_TOOLS_BINARY, "--socket=" + socket_,
                                     "--workdir=" + (dir_ / "work").string(),
                                     "--lifeline-wait-seconds=" + lifeline_wait};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(::posix_spawn(&pid_, HB_TOOLS_BINARY, nullptr, nullptr, argv.data(), environ), 0);
    if (wait_for_socket) {
      ASSERT_TRUE(eventually([&] { return fs::exists(socket_); }, 5s));
    }
  }
  // Exit code of the server once it ended, or -1 if it is still running after `timeout`.
  int exit_code_within(std::chrono::milliseconds timeout) {
    int status = 0;
    const bool ended =
        eventually([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
    if (!ended) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // One raw request line (or bytes), the server's reply line.
  std::string raw(const std::string& bytes) {
    const int fd = connect_unix(socket_);
    EXPECT_GE(fd, 0);
    ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    std::string reply;
    char buffer[4096];
    ssize_t n;
    while ((n = ::recv(fd, buffer, sizeof buffer, 0)) > 0) reply.append(buffer, n);
    ::close(fd);
    return reply;
  }
  ShellOptions options(std::chrono::milliseconds timeout = 10s) {
    ShellOptions o;
    o.timeout = timeout;
    o.beat_interval = 50ms;
    o.beat = [this] { ++beats_; };
    return o;
  }

  static inline int counter_ = 0;
  fs::path dir_;
  std::string socket_;
  pid_t pid_ = -1;
  std::atomic<int> beats_{0};
};

TEST_F(ToolsServer, RunsACommandInTheWorkspaceWithAFixedEnvironment) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  RemoteShell shell(socket_, 5s, &lifeline);
  ::setenv("HB_TOOLS_TEST_SECRET", "not-for-tools", 1);
  ShellResult r = shell.run("echo hi; pwd; echo \"[$HB_TOOLS_TEST_SECRET]\"; exit 3", options());
  EXPECT_EQ(r.spawn_error, "");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "hi\n" + (dir_ / "work").string() + "\n[]\n");
  EXPECT_FALSE(shell.unavailable());
}

// A kubelet's volume paths can pass sun_path's 107 bytes (Pod uid, volume
// name): both sides reach such a socket through its directory.
TEST_F(ToolsServer, ASocketPathLongerThanSunPathWorks) {
  const fs::path deep = dir_ / std::string(60, 'd') / std::string(60, 'e');
  fs::create_directories(deep);
  socket_ = (deep / "tools.sock").string();
  ASSERT_GT(socket_.size(), 108u);
  start();
  ToolsLifeline lifeline(socket_, 5s);
  RemoteShell shell(socket_, 5s, &lifeline);
  EXPECT_EQ(shell.run("echo far", options()).output, "far\n");
}

TEST_F(ToolsServer, EveryProcessACallLeftIsKilledSetsidAndDoubleForkToo) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  RemoteShell shell(socket_, 5s, &lifeline);
  ShellResult r = shell.run(
      "setsid sh -c 'sleep 7301' >/dev/null 2>&1 < /dev/null & "
      "(sh -c 'sleep 7302 >/dev/null 2>&1 &' &); sleep 0.3; echo started",
      options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("started"), std::string::npos);
  // The reply comes after the sweep: nothing is left when the call returns.
  EXPECT_EQ(processes_with("sleep 7301"), 0);
  EXPECT_EQ(processes_with("sleep 7302"), 0);
  // The server still serves.
  EXPECT_EQ(shell.run("true", options()).exit_code, 0);
}

TEST_F(ToolsServer, ATimedOutCallIsKilledAndSaysSo) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  RemoteShell shell(socket_, 5s, &lifeline);
  const auto began = Steady::now();
  ShellResult r = shell.run("sleep 7303", options(300ms));
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(Steady::now() - began, 5s);
  EXPECT_EQ(processes_with("sleep 7303"), 0);
}

TEST_F(ToolsServer, ACancelledCallIsKilled) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  RemoteShell shell(socket_, 5s, &lifeline);
  ShellOptions o = options();
  const auto cancel_at = Steady::now() + 500ms;
  o.cancelled = [&] { return Steady::now() >= cancel_at; };
  ShellResult r = shell.run("sleep 7304", o);
  EXPECT_NE(r.spawn_error.find("cancelled"), std::string::npos);
  EXPECT_TRUE(eventually([] { return processes_with("sleep 7304") == 0; }, 3s));
}

TEST_F(ToolsServer, HostileRequestsAreRefusedAndTheServerGoesOn) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  EXPECT_NE(raw(std::string(tools::kRequestBytesMax + 10, 'x')).find("error"), std::string::npos);
  EXPECT_NE(raw(std::string(60000, '[') + "\n").find("nested"), std::string::npos);
  EXPECT_NE(raw("not json\n").find("error"), std::string::npos);
  EXPECT_NE(raw(R"({"op":"exec","command":"true","timeoutMs":1.5})"
                "\n")
                .find("whole numbers"),
            std::string::npos);
  // A huge timeout is clamped to the bound, never cast past it.
  EXPECT_NE(raw(R"({"op":"exec","command":"true","timeoutMs":1e300})"
                "\n")
                .find("exitCode"),
            std::string::npos);
  EXPECT_NE(raw(R"({"op":"exec","command":""})"
                "\n")
                .find("command"),
            std::string::npos);
  EXPECT_NE(raw(R"({"op":"lifeline"})"
                "\n")
                .find("already"),
            std::string::npos);
  RemoteShell shell(socket_, 5s, &lifeline);
  EXPECT_EQ(shell.run("echo still here", options()).output, "still here\n");
}

TEST_F(ToolsServer, ASlowClientIsDroppedAfterTheReadTimeout) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  const int slow = connect_unix(socket_);
  ASSERT_GE(slow, 0);
  ::send(slow, "{\"op\":", 6, MSG_NOSIGNAL);  // and nothing more
  RemoteShell shell(socket_, 5s, &lifeline);
  const auto began = Steady::now();
  EXPECT_EQ(shell.run("echo served", options(5s)).output, "served\n");
  EXPECT_LT(Steady::now() - began, 15s);
  ::close(slow);
}

TEST_F(ToolsServer, TheLifelineClosingEndsTheServerAndItsCall) {
  start();
  auto lifeline = std::make_unique<ToolsLifeline>(socket_, 5s);
  ASSERT_TRUE(eventually([&] { return lifeline->held(); }, 5s));
  std::thread call([&] {
    RemoteShell shell(socket_, 5s, nullptr);
    shell.run("sleep 7305", options(60s));
  });
  ASSERT_TRUE(eventually([] { return processes_with("sleep 7305") > 0; }, 5s));
  lifeline.reset();  // the runner exited
  EXPECT_EQ(exit_code_within(5s), 0);
  call.join();
  EXPECT_EQ(processes_with("sleep 7305"), 0);
}

// Bytes sent on a Unix stream socket that the peer has not read yet.
int unread_by_peer(int fd) {
  int bytes = -1;
  return ::ioctl(fd, SIOCOUTQ, &bytes) == 0 ? bytes : -1;
}

// CPU seconds (user + system) the process has used so far.
double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream text;
  text << in.rdbuf();
  const std::string stat = text.str();
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // state .. cmajflt
  long long user = 0, system = 0;
  fields >> user >> system;
  return static_cast<double>(user + system) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

TEST_F(ToolsServer, BytesOnTheLifelineAreDroppedNotSpunOn) {
  start();
  const int lifeline = connect_unix(socket_);
  ASSERT_GE(lifeline, 0);
  const std::string request = tools::encode_lifeline();
  ::send(lifeline, request.data(), request.size(), MSG_NOSIGNAL);
  // The server read the request: it holds the connection as the lifeline.
  ASSERT_TRUE(eventually([&] { return unread_by_peer(lifeline) == 0; }, 5s));
  ::send(lifeline, "xyz", 3, MSG_NOSIGNAL);
  const double before = cpu_seconds(pid_);
  std::this_thread::sleep_for(1s);  // the window the CPU use is measured over
  EXPECT_LT(cpu_seconds(pid_) - before, 0.2) << "the server busy-loops";
  ::close(lifeline);
  EXPECT_EQ(exit_code_within(5s), 0);
}

// The Pod is deleted: SIGTERM ends the server like a closed lifeline, its
// call's processes with it (no PID namespace may be there to end them).
TEST_F(ToolsServer, SigtermEndsTheServerAndEveryProcessOfItsCall) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  std::thread call([&] {
    RemoteShell shell(socket_, 5s, nullptr);
    shell.run("setsid sleep 7306 & sleep 7307", options(60s));
  });
  ASSERT_TRUE(eventually([] { return processes_with("sleep 7307") > 0; }, 5s));
  ::kill(pid_, SIGTERM);
  EXPECT_EQ(exit_code_within(5s), 0);
  call.join();
  EXPECT_EQ(processes_with("sleep 7306"), 0);
  EXPECT_EQ(processes_with("sleep 7307"), 0);
}

TEST_F(ToolsServer, WithoutALifelineTheServerEndsSoThePodCompletes) {
  start("1");
  EXPECT_EQ(exit_code_within(5s), 0);
}

// Seen on a real node: a heartbeat that never used the shell ended before
// the tools container listened. The lifeline still reaches the server and
// closes, or the server waits its whole lifeline wait and the Pod lingers.
TEST_F(ToolsServer, ARunnerDoneBeforeTheServerListensStillEndsIt) {
  auto lifeline = std::make_unique<ToolsLifeline>(socket_, 30s);
  std::atomic<bool> exiting{false};
  std::thread runner_exits([&] {
    exiting = true;
    lifeline.reset();  // waits for the server
  });
  // The runner is leaving before the server is even spawned (a spawn and a
  // listen take far longer than entering the destructor).
  EXPECT_TRUE(eventually([&] { return exiting.load(); }, 5s));
  start("120", false);
  runner_exits.join();
  EXPECT_EQ(exit_code_within(5s), 0) << "the server did not see the lifeline close";
}

TEST_F(ToolsServer, WithNoServerTheGoodbyeIsBoundedByTheConnectWait) {
  auto lifeline = std::make_unique<ToolsLifeline>(socket_, 1s);
  const auto began = Steady::now();
  lifeline.reset();
  EXPECT_LT(Steady::now() - began, 3s);
}

TEST_F(ToolsServer, AServerThatIsGoneMakesTheToolsUnavailable) {
  start();
  auto lifeline = std::make_unique<ToolsLifeline>(socket_, 5s);
  ASSERT_TRUE(eventually([&] { return lifeline->held(); }, 5s));
  RemoteShell shell(socket_, 5s, lifeline.get());
  ::kill(pid_, SIGKILL);  // the tools container died
  ASSERT_TRUE(eventually([&] { return lifeline->lost(); }, 5s));
  ShellResult r = shell.run("true", options());
  EXPECT_NE(r.spawn_error.find("did not answer"), std::string::npos);
  EXPECT_TRUE(shell.unavailable());
}

// A fake server on the socket answering `reply` (or nothing) to one request.
class HostileServer {
 public:
  HostileServer(const std::string& path, std::string reply, bool answer)
      : reply_(std::move(reply)), answer_(answer) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(fd_, 4);
    thread_ = std::thread([this] {
      while (true) {
        const int client = ::accept(fd_, nullptr, nullptr);
        if (client < 0) return;
        char buffer[4096];
        ::recv(client, buffer, sizeof buffer, 0);
        if (answer_) ::send(client, reply_.data(), reply_.size(), MSG_NOSIGNAL);
        if (answer_) ::close(client);
      }
    });
  }
  ~HostileServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }

 private:
  std::string reply_;
  bool answer_;
  int fd_ = -1;
  std::thread thread_;
};

TEST_F(ToolsServer, HostileRepliesAreToolErrorsNeverACrash) {
  const std::string deep = std::string(100000, '[') + "\n";
  const std::string huge = std::string(10 * 1024 * 1024, 'a');
  int case_number = 0;
  for (const std::string& reply : {std::string("garbage\n"), deep, huge, std::string(""),
                                   std::string(R"({"output":7})"
                                               "\n")}) {
    const std::string path = (dir_ / ("h" + std::to_string(case_number++) + ".sock")).string();
    HostileServer server(path, reply, true);
    RemoteShell shell(path, 1s, nullptr);
    for (int call = 0; call < 2; ++call) {
      ShellResult r = shell.run("true", options(1s));
      EXPECT_NE(r.spawn_error.find("did not answer"), std::string::npos) << reply.substr(0, 20);
    }
    EXPECT_FALSE(shell.unavailable()) << "a server that answers badly is not gone";
  }
}

TEST_F(ToolsServer, AServerThatNeverAnswersGivesUpAfterTheCallsTimeout) {
  HostileServer server(socket_, "", false);
  RemoteShell shell(socket_, 1s, nullptr);
  ShellOptions o = options(200ms);
  o.kill_grace = 100ms;
  const auto began = Steady::now();
  ShellResult r = shell.run("true", o);
  EXPECT_NE(r.spawn_error.find("no reply"), std::string::npos);
  EXPECT_LT(Steady::now() - began, tools::kExecTimeoutMax);
  EXPECT_EQ(beats_.load(), 0) << "no progress line, no beat";
  // It was reached: each call fails, the run goes on.
  EXPECT_NE(shell.run("true", o).spawn_error.find("did not answer"), std::string::npos);
  EXPECT_FALSE(shell.unavailable());
}

// Beats follow the command's progress, never a timer: a hung command lets
// the run's Lease run out (Stalled), one that prints or computes keeps it.
TEST_F(ToolsServer, AHungCommandNeverBeats) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  RemoteShell shell(socket_, 5s, &lifeline);
  ShellResult r = shell.run("sleep 3", options());
  EXPECT_EQ(r.exit_code, 0) << r.spawn_error;
  EXPECT_EQ(beats_.load(), 0);
}

TEST_F(ToolsServer, ACommandThatPrintsBeats) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  RemoteShell shell(socket_, 5s, &lifeline);
  ShellResult r =
      shell.run("for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo $i; sleep 0.25; done", options());
  EXPECT_EQ(r.exit_code, 0) << r.spawn_error;
  EXPECT_GE(beats_.load(), 2);
}

TEST_F(ToolsServer, ACommandThatComputesSilentlyBeats) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  RemoteShell shell(socket_, 5s, &lifeline);
  const auto began = Steady::now();
  ShellResult r =
      shell.run("end=$(($(date +%s) + 3)); while [ $(date +%s) -lt $end ]; do :; done", options());
  EXPECT_EQ(r.exit_code, 0) << r.spawn_error;
  EXPECT_GE(Steady::now() - began, 2s);
  EXPECT_GE(beats_.load(), 1);
}

// A hostile server's progress lines are beats, never a reply or a crash.
TEST_F(ToolsServer, ProgressLinesBeforeTheReplyAreBeats) {
  tools::ExecReply ok;
  ok.exit_code = 0;
  ok.output = "ok";
  ok.output_bytes = 2;
  const std::string reply =
      tools::encode_progress() + tools::encode_progress() + tools::encode_reply(ok);
  HostileServer server(socket_, reply, true);
  RemoteShell shell(socket_, 1s, nullptr);
  ShellResult r = shell.run("true", options());
  EXPECT_EQ(r.output, "ok") << r.spawn_error;
  EXPECT_EQ(beats_.load(), 2);
}

TEST(ProcessTree, CpuTicksFromStat) {
  EXPECT_EQ(tools::cpu_ticks_from_stat(
                "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 5 0 0"),
            13);
  EXPECT_EQ(tools::cpu_ticks_from_stat("42 (x) S 1 2"), -1);
  EXPECT_EQ(tools::cpu_ticks_from_stat("garbage"), -1);
}

// A server that accepts and never reads: a command longer than any request
// the server takes is refused unsent, and a cancel ends the call at once.
TEST_F(ToolsServer, AServerThatNeverReadsCannotHoldTheRunner) {
  HostileServer server(socket_, "", false);
  RemoteShell shell(socket_, 1s, nullptr);
  const auto began = Steady::now();
  ShellResult r = shell.run(std::string(1024 * 1024, 'x'), options(60s));
  EXPECT_LT(Steady::now() - began, 2s);
  EXPECT_NE(r.spawn_error.find("too long"), std::string::npos) << r.spawn_error;
  std::atomic<bool> cancel{false};
  ShellOptions o = options(60s);
  o.cancelled = [&] { return cancel.load(); };
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    cancel = true;
  });
  const auto second = Steady::now();
  r = shell.run(std::string(60 * 1024, 'y'), o);
  canceller.join();
  EXPECT_LT(Steady::now() - second, 2s) << "a cancel ends the wait";
  EXPECT_NE(r.spawn_error.find("cancelled"), std::string::npos) << r.spawn_error;
}

TEST_F(ToolsServer, ASocketNobodyListensOnMakesTheToolsUnavailable) {
  RemoteShell shell((dir_ / "nobody.sock").string(), 300ms, nullptr);
  const auto began = Steady::now();
  ShellResult first = shell.run("true", options());
  EXPECT_GE(Steady::now() - began, 300ms) << "the first call waits for the socket to appear";
  EXPECT_NE(first.spawn_error.find("did not answer"), std::string::npos);
  EXPECT_FALSE(shell.unavailable());  // one call could not connect
  shell.run("true", options());
  EXPECT_TRUE(shell.unavailable());  // two in a row, after the connect wait: gone
}

TEST_F(ToolsServer, BinaryOutputComesBackAsAResult) {
  start();
  ToolsLifeline lifeline(socket_, 5s);
  RemoteShell shell(socket_, 5s, &lifeline);
  // Control bytes grow 6-fold as JSON ("\u0000"); the reply must still fit.
  for (int i = 0; i < 3; ++i) {
    ShellResult r = shell.run("head -c 40000 /dev/zero; head -c 40000 /dev/urandom", options());
    EXPECT_EQ(r.spawn_error, "");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.output_bytes, 80000u);
    EXPECT_TRUE(r.truncated);
  }
  EXPECT_FALSE(shell.unavailable());
}

// The real Toolbox and loop, the shell tool pointed at a socket nobody
// listens on: the first call is a tool error, the second stops the run.
TEST(ToolsUnavailable, TheLoopStopsWithExitCode75) {
  fakes::FakeClock clock;
  Heartbeat heartbeat(clock);
  CoreMemoryService memory({{"notes", "", 100}}, nullptr);
  RemoteShell shell((fs::temp_directory_path() / "hb-no-tools-here.sock").string(), 100ms);
  Toolbox tools({memory, nullptr, heartbeat, clock, "run", {}, nullptr, &shell});
  fakes::ScriptedModel model;
  for (const char* command : {"ls", "pwd", "id"}) {
    model.push(
        fakes::ScriptedModel::call("shell", std::string(R"({"command":")") + command + "\"}"));
  }
  model.push(fakes::ScriptedModel::text("never asked"));
  MemoryTranscript transcript;
  LoopConfig config;
  config.model = "m";
  config.agent_type = api::AgentType::kReact;
  config.tools = offered_tools(api::capabilities(config.agent_type), false).tools;
  config.max_tokens = 100;
  config.wall_deadline = clock.now() + 10min;
  config.first_message = "heartbeat";
  api::RunResult result = run_agent_loop(config, {model, tools, clock, heartbeat, transcript});
  EXPECT_EQ(result.stop_reason, to_string(StopReason::kToolsUnavailable));
  EXPECT_EQ(api::exit_code_for(*api::parse_stop_reason(result.stop_reason)), 75);
  EXPECT_EQ(result.llm_calls, 2);
  EXPECT_NE(result.error.find("did not answer"), std::string::npos) << result.error;
  auto answers = transcript.events("tool_result");
  ASSERT_EQ(answers.size(), 1u) << "the first failure is the model's to see";
  EXPECT_TRUE(answers[0]["isError"].get<bool>());
}

TEST(ProcessTree, ParsesStatWithHostileCommandNames) {
  EXPECT_EQ(tools::parent_from_stat("123 (sh) S 45 123 123 0"), 45);
  EXPECT_EQ(tools::parent_from_stat("123 (a) b) (c) R 46 1 1"), 46);
  EXPECT_EQ(tools::parent_from_stat("garbage"), -1);
  EXPECT_EQ(tools::parent_from_stat(""), -1);
  const std::map<pid_t, pid_t> parents = {{2, 1}, {3, 2}, {4, 3}, {5, 9}, {9, 5}};
  auto found = tools::descendants(1, parents);
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (std::vector<pid_t>{2, 3, 4}));  // the 5 <-> 9 cycle ends
}

TEST(ToolsProtocol, RoundTripsAndBoundsNumbers) {
  auto request = tools::decode_request(tools::encode_exec({"ls", 1500ms, 10, 20}));
  ASSERT_TRUE(request.value) << request.error;
  EXPECT_EQ(request.value->exec.command, "ls");
  EXPECT_EQ(request.value->exec.timeout, 1500ms);
  auto clamped = tools::decode_request(
      R"({"op":"exec","command":"x","timeoutMs":99999999999,"outputHeadBytes":99999999})");
  ASSERT_TRUE(clamped.value);
  EXPECT_EQ(clamped.value->exec.timeout, tools::kExecTimeoutMax);
  EXPECT_EQ(clamped.value->exec.head_bytes, tools::kOutputCaptureBytesMax);
  tools::ExecReply reply;
  reply.exit_code = 2;
  reply.output = "out";
  auto decoded = tools::decode_reply(tools::encode_reply(reply));
  ASSERT_TRUE(decoded.value) << decoded.error;
  EXPECT_EQ(decoded.value->exit_code, 2);
  EXPECT_FALSE(tools::decode_reply(R"({"exitCode":1e300,"output":""})").value);
}

}  // namespace
}  // namespace hb::runner
