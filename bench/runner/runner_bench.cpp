// The runner issue's performance targets, measured on the real binary:
//   ninja -C build hb_runner_bench && build/bench/runner/hb_runner_bench
//   options: --runs N (start-up samples, default 100), --step-runs N (10-step
//   runs per kind, default 20), --loop-runs N (in-process loops, default 500),
//   --runner PATH (default: the heartbeat-runner built with this tree)
// Targets: process start to first model request <= 20 ms; peak RSS <= 20 MiB
// for a 10-step run; loop overhead <= 1 ms per step; peak RSS <= 64 MiB under
// the worst replies the runner's bounds allow (--worst-runs N, default 3);
// with tracing on (OTLP export to a collector stand-in on 127.0.0.1), start
// to first model request within 1 ms of tracing off, and peak RSS still
// <= 20 MiB.
//
// Each sample spawns heartbeat-runner (posix_spawn) with a context document
// pointing at the scripted fake model server (tests/fakes) on 127.0.0.1, as a
// Job would run it but without Kubernetes access. A plain program rather than
// Google Benchmark: the samples are child processes and the numbers wanted
// are distributions over runs (p50/p99/max), not a hot loop's mean. It prints
// a table and asserts nothing.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/context_document.h"
#include "api/rfc3339.h"
#include "runner/agent_loop.h"
#include "runner/limits.h"
#include "runner/prompt.h"
#include "runner/stop_rules.h"
#include "runner/tool_specs.h"
#include "runner/transcript.h"
#include "tests/fakes/fake_model_server.h"
#include "tests/fakes/scripted_model.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using hb::fakes::FakeModelServer;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

constexpr double kStartToFirstRequestMsGoal = 20;
constexpr double kPeakRssMibGoal = 20;
constexpr double kLoopOverheadPerStepMsGoal = 1;
constexpr double kWorstPeakRssMibGoal = 64;
constexpr double kTracingStartCostMsGoal = 1;
// A hostile model's reply: as many tool calls as the runner runs, each a
// command printing 16 KiB of control bytes (six-fold once JSON-escaped).
constexpr int kHostileCallsPerReply = static_cast<int>(hb::runner::kToolCallsPerReplyMax);
constexpr int kStepsPerRun = 10;  // react_agent's max iterations: 9 tool calls, then the answer

// The process's own peak RSS (VmHWM of its current address space), in MiB;
// 0 when unreadable. Not wait4's ru_maxrss: a child spawned with vfork
// (posix_spawn) carries the parent's high-water mark into it, so a bench
// that has held large replies would be measured instead of the runner.
double vm_hwm_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return 0;
}

// Samples a running child's VmHWM every millisecond until stopped; the last
// sample is its peak up to then (the high-water mark only grows).
class PeakRssProbe {
 public:
  explicit PeakRssProbe(pid_t pid)
      : thread_([this, pid] {
          while (!stop_) {
            if (const double mib = vm_hwm_mib(pid); mib > 0) peak_ = std::max(peak_.load(), mib);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }) {}
  double stop() {
    stop_ = true;
    thread_.join();
    return peak_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<double> peak_{0};
  std::thread thread_;
};

double ms_between(Steady::time_point from, Steady::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

struct Stats {
  std::size_t n = 0;
  double p50 = 0, p99 = 0, max = 0, mean = 0;
};

// Nearest-rank percentiles.
Stats stats_of(std::vector<double> samples) {
  Stats s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  auto rank = [&](double p) {
    auto index = static_cast<std::size_t>(std::ceil(p * static_cast<double>(samples.size())));
    return samples[std::clamp<std::size_t>(index, 1, samples.size()) - 1];
  };
  s.p50 = rank(0.50);
  s.p99 = rank(0.99);
  s.max = samples.back();
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean = sum / static_cast<double>(samples.size());
  return s;
}

struct ChildRun {
  int exit_code = -1;
  double max_rss_mib = 0;
  Steady::time_point spawned;
  double wall_ms = 0;  // spawn to reaped
  double cpu_ms = 0;   // user + system CPU of the runner (and its shell children)
  std::string termination;
  double tools_max_rss_mib = 0;  // the tools server beside it, when there was one
};

// How the shell tool runs: a heartbeat-tools server started with the runner,
// as the Pod's second container is, or in the runner's own process.
enum class Tools { kContainer, kInProcess };
// Tracing on: the runner exports its trace and metrics over OTLP/HTTP to a
// collector stand-in that accepts everything, under a TRACEPARENT as the
// operator sets it.
enum class Tracing { kOff, kOn };

class RunnerHarness {
 public:
  RunnerHarness(std::string runner, std::string tools)
      : runner_(std::move(runner)), tools_(std::move(tools)) {
    dir_ = fs::temp_directory_path() / ("hb-runner-bench-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // A realistic document: persona, two memory blocks, three earlier outputs.
    json context = {
        {"kind", "HeartbeatContext"},
        {"agent", {{"name", "bench"}, {"namespace", "default"}, {"type", "react_agent"}}},
        {"model",
         {{"provider", "openai"},
          {"model", "fake"},
          {"baseURL", server_.url() + "/v1"},
          {"maxTokens", 1024},
          {"pricing", {{"inputCentsPerMillionTokens", 15}, {"outputCentsPerMillionTokens", 60}}}}},
        {"persona", "You are Bench, who keeps an eye on the build farm. " + std::string(400, 'p')},
        {"memory",
         {{"blocks",
           {{{"label", "human"}, {"value", "Ada runs the farm."}, {"limit", 2000}},
            {{"label", "notes"}, {"value", std::string(1000, 'n')}, {"limit", 5000}}}}}},
        {"heartbeat", {{"prompt", "Do ten steps, then report."}}},
        {"budget", {{"perRunCents", 25}}},
        {"recentRuns", json::array()},
        {"run",
         {{"name", "bench-1"},
          {"invocationSource", "manual"},
          {"deadline", hb::api::format_rfc3339_millis(std::chrono::system_clock::now() +
                                                      std::chrono::hours(1))}}}};
    for (int i = 0; i < 3; ++i) {
      context["recentRuns"].push_back({{"name", "bench-0" + std::to_string(i)},
                                       {"stopReason", "completed"},
                                       {"output", "Queue empty. " + std::string(200, 'o')}});
    }
    context_text_ = context.dump();
    std::ofstream(dir_ / "context.json") << context_text_;
    for (char** e = environ; *e; ++e) {
      std::string item(*e);
      if (item.rfind("KUBERNETES_", 0) == 0 || item.rfind("HEARTBEAT_", 0) == 0) continue;
      env_.push_back(item);
    }
    env_.push_back("HEARTBEAT_API_KEY=sk-bench");
    env_.push_back("HEARTBEAT_CONTEXT_PATH=" + (dir_ / "context.json").string());
    env_.push_back("HEARTBEAT_TERMINATION_PATH=" + (dir_ / "termination-log").string());
    collector_.set_recording(false);
    collector_.set_responder([](const hb::fakes::RecordedRequest&) {
      return hb::fakes::ScriptedResponse{200, {{"Content-Type", "application/json"}}, "{}"};
    });
  }
  ~RunnerHarness() {
    server_.stop();
    collector_.stop();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  FakeModelServer& server() { return server_; }
  const std::string& context_text() const { return context_text_; }

  ChildRun run(Tools where = Tools::kContainer, Tracing tracing = Tracing::kOff) {
    std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    std::vector<std::string> env = env_;
    if (tracing == Tracing::kOn) {
      env.push_back("OTEL_EXPORTER_OTLP_ENDPOINT=" + collector_.url());
      env.push_back("TRACEPARENT=00-7c9e6679742540de944be07fc1f90ae7-a3ce929d0e0e4736-01");
    }
    const std::string socket = (dir_ / "tools.sock").string();
    env.push_back(where == Tools::kContainer ? "HEARTBEAT_TOOLS_SOCKET=" + socket
                                             : std::string("HEARTBEAT_TOOLS_LOCAL=1"));
    std::vector<char*> envp;
    for (auto& item : env) envp.push_back(item.data());
    envp.push_back(nullptr);
    // Both containers of a Pod start together: the server is not waited for.
    const pid_t tools = where == Tools::kContainer ? spawn_tools(socket) : -1;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::string binary = runner_;
    char* argv[] = {binary.data(), nullptr};
    ChildRun run;
    pid_t pid = 0;
    run.spawned = Steady::now();
    int spawn_error = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (spawn_error != 0) {
      std::fprintf(stderr, "cannot spawn %s: %s\n", binary.c_str(), std::strerror(spawn_error));
      std::exit(1);
    }
    PeakRssProbe probe(pid);
    // Reaped only after the probe's last look: waitid leaves it a zombie.
    siginfo_t info{};
    ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT);
    const double peak_mib = probe.stop();
    int status = 0;
    rusage usage{};
    ::wait4(pid, &status, 0, &usage);
    run.wall_ms = ms_between(run.spawned, Steady::now());
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    run.max_rss_mib = peak_mib;
    auto ms = [](const timeval& tv) {
      return static_cast<double>(tv.tv_sec) * 1e3 + static_cast<double>(tv.tv_usec) / 1e3;
    };
    run.cpu_ms = ms(usage.ru_utime) + ms(usage.ru_stime);
    if (tools > 0) {  // it exits when the runner's lifeline closes
      rusage tools_usage{};
      ::wait4(tools, &status, 0, &tools_usage);
      run.tools_max_rss_mib = static_cast<double>(tools_usage.ru_maxrss) / 1024.0;
    }
    std::stringstream term;
    term << std::ifstream(dir_ / "termination-log").rdbuf();
    run.termination = term.str();
    return run;
  }

 private:
  pid_t spawn_tools(const std::string& socket) {
    fs::create_directories(dir_ / "work");
    std::string binary = tools_, socket_flag = "--socket=" + socket,
                work_flag = "--workdir=" + (dir_ / "work").string();
    char* argv[] = {binary.data(), socket_flag.data(), work_flag.data(), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (dir_ / "tools.log").string();
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int error = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) {
      std::fprintf(stderr, "cannot spawn %s: %s\n", binary.c_str(), std::strerror(error));
      std::exit(1);
    }
    return pid;
  }

  FakeModelServer server_;
  FakeModelServer collector_;
  std::string runner_;
  std::string tools_;
  fs::path dir_;
  std::string context_text_;
  std::vector<std::string> env_;
};

// Warns (stderr) when a sample did not run as scripted, so a broken run never
// passes as a fast one.
bool check(const ChildRun& run, int iterations) {
  json result = json::parse(run.termination, nullptr, false);
  if (run.exit_code == 0 && result.is_object() && result.value("stopReason", "") == "completed" &&
      result["usage"].value("iterations", 0) == iterations) {
    return true;
  }
  std::fprintf(stderr, "warning: unexpected run (exit %d): %s\n", run.exit_code,
               run.termination.c_str());
  return false;
}

struct StepRuns {
  std::vector<double> rss_mib, step_ms, wall_ms, tools_rss_mib;
};

// kStepsPerRun model calls; tool_name/command shape the 9 tool steps.
StepRuns ten_step_runs(RunnerHarness& h, int runs, const std::string& tool_name,
                       Tools where = Tools::kContainer, Tracing tracing = Tracing::kOff) {
  StepRuns out;
  for (int r = 0; r < runs; ++r) {
    std::size_t before = h.server().requests().size();
    for (int i = 0; i < kStepsPerRun - 1; ++i) {
      std::string id = "c" + std::to_string(i);
      // Distinct arguments each step: three identical calls in a row stop the run.
      std::string arguments = R"({"command":"echo step )" + std::to_string(i) + R"("})";
      h.server().push(FakeModelServer::openai_tool_calls({{id, tool_name, arguments}}));
    }
    h.server().push(FakeModelServer::openai_text("ten steps done"));
    ChildRun run = h.run(where, tracing);
    if (!check(run, kStepsPerRun)) continue;
    auto requests = h.server().requests();
    out.rss_mib.push_back(run.max_rss_mib);
    out.wall_ms.push_back(run.wall_ms);
    out.tools_rss_mib.push_back(run.tools_max_rss_mib);
    // The fake server answers at once (no scripted delay), so the time from
    // one model request to the next is the runner's own work for the step.
    for (std::size_t i = before + 1; i < requests.size(); ++i) {
      out.step_ms.push_back(ms_between(requests[i - 1].received, requests[i].received));
    }
  }
  return out;
}

// The worst replies the bounds allow, each run to its stop: (1) every reply
// asks for kHostileCallsPerReply shell calls printing control bytes, until
// the run's tool output bound; (2) every reply body just under
// kModelReplyBytesMax of text with a call, until the request bound.
struct WorstRuns {
  std::vector<double> many_calls_rss, huge_reply_rss;
  std::string many_calls_stop, huge_reply_stop;
};

std::string stop_reason_of(const ChildRun& run) {
  json result = json::parse(run.termination, nullptr, false);
  if (!result.is_object()) return "unreadable";
  const std::string error = result.value("error", std::string());
  return result.value("stopReason", std::string("?")) + (error.empty() ? "" : " (" + error + ")");
}

WorstRuns worst_case_runs(RunnerHarness& h, int runs) {
  WorstRuns out;
  h.server().set_recording(false);
  int reply = 0;  // distinct commands: three identical calls in a row stop a run
  auto hostile = [&reply](const hb::fakes::RecordedRequest&) {
    std::vector<hb::fakes::FakeToolCall> calls;
    for (int i = 0; i < kHostileCallsPerReply; ++i) {
      const std::string n = std::to_string(reply * kHostileCallsPerReply + i);
      calls.push_back({"c" + n, "shell",
                       R"({"command":"head -c 16384 /dev/zero | tr '\\0' '\\1' # )" + n + R"("})"});
    }
    ++reply;
    return FakeModelServer::openai_tool_calls(calls);
  };
  for (int r = 0; r < runs; ++r) {
    h.server().set_responder(hostile);
    ChildRun run = h.run();
    h.server().set_responder({});
    out.many_calls_rss.push_back(run.max_rss_mib);
    out.many_calls_stop = stop_reason_of(run);

    // Replies as large as the reply cap allows (text and one call), until a bound.
    const std::string text(hb::runner::kModelReplyBytesMax - 4096, 'x');
    int step = 0;
    h.server().set_responder([&](const hb::fakes::RecordedRequest&) {
      const std::string arguments = R"({"command":"true # )" + std::to_string(++step) + R"("})";
      auto huge = FakeModelServer::openai_tool_calls({{"c0", "shell", arguments}});
      json body = json::parse(huge.body);
      body["choices"][0]["message"]["content"] = text;
      huge.body = body.dump();
      return huge;
    });
    run = h.run();
    h.server().set_responder({});
    out.huge_reply_rss.push_back(run.max_rss_mib);
    out.huge_reply_stop = stop_reason_of(run);
  }
  return out;
}

// The agent loop in process: instant scripted model, no-op tools, the real
// system prompt re-rendered every step and JSON-lines transcript to /dev/null.
std::vector<double> in_process_loop_per_step_ms(const std::string& context_text, int runs) {
  using namespace hb::runner;
  struct NoTools final : ToolRunner {
    ToolOutcome run(const std::string&, const json&, TimePoint) override {
      return {"exit_code: 0\nok", false};
    }
  } tools;
  hb::api::ContextDocument doc = hb::api::parse_context_document_text(context_text).value();
  SystemClock clock;
  std::ofstream devnull("/dev/null");
  JsonLinesTranscript transcript(devnull, clock);
  auto offered = offered_tools(hb::api::capabilities(doc.agent_type), false).tools;
  std::vector<double> per_step;
  for (int r = 0; r < runs; ++r) {
    hb::fakes::ScriptedModel model;
    for (int i = 0; i < kStepsPerRun - 1; ++i) {
      model.push(hb::fakes::ScriptedModel::call(
          "shell", R"({"command":"echo step )" + std::to_string(i) + R"("})"));
    }
    model.push(hb::fakes::ScriptedModel::text("done"));
    Heartbeat heartbeat(clock);
    LoopConfig config;
    config.model = doc.model.model;
    config.agent_type = doc.agent_type;
    config.tools = offered;
    config.max_tokens = doc.model.max_tokens;
    config.pricing = doc.model.pricing;
    config.budget_cents = doc.budget.run_limit_cents();
    config.wall_deadline = wall_deadline_for(doc.run.deadline);
    config.first_message = render_heartbeat_message(doc);
    config.system_prompt = [&] {
      return render_system_prompt(doc, doc.memory_blocks, offered, clock.now());
    };
    auto started = Steady::now();
    hb::api::RunResult result =
        run_agent_loop(config, {model, tools, clock, heartbeat, transcript});
    double elapsed = ms_between(started, Steady::now());
    if (result.iterations != kStepsPerRun) {
      std::fprintf(stderr, "warning: in-process loop ran %lld steps\n",
                   static_cast<long long>(result.iterations));
      continue;
    }
    per_step.push_back(elapsed / kStepsPerRun);
  }
  return per_step;
}

int int_flag(int argc, char** argv, const std::string& flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == flag) return std::max(1, std::atoi(argv[i + 1]));
  }
  return fallback;
}

std::string string_flag(int argc, char** argv, const std::string& flag,
                        const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == flag) return argv[i + 1];
  }
  return fallback;
}

void row(const char* measure, const char* unit, const Stats& s, double goal) {
  char goal_text[32] = "-";
  const char* verdict = "(info)";
  if (goal > 0) {
    std::snprintf(goal_text, sizeof goal_text, "<= %g", goal);
    verdict = s.max <= goal ? "met" : (s.p50 <= goal ? "p50 met" : "MISSED");
  }
  std::printf("| %-52s | %-4s | %5zu | %8.3f | %8.3f | %8.3f | %8.3f | %-7s | %-7s |\n", measure,
              unit, s.n, s.p50, s.p99, s.max, s.mean, goal_text, verdict);
}

// Differences of paired samples (tracing on minus its tracing-off twin):
// met when the median difference is within the goal either way (the
// spread is the machine's load, which pairing cancels in the median).
void difference_row(const char* measure, const Stats& s, double goal) {
  char goal_text[32];
  std::snprintf(goal_text, sizeof goal_text, "+-%g p50", goal);
  std::printf("| %-52s | %-4s | %5zu | %8.3f | %8.3f | %8.3f | %8.3f | %-7s | %-7s |\n", measure,
              "ms", s.n, s.p50, s.p99, s.max, s.mean, goal_text,
              std::abs(s.p50) <= goal ? "met" : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: hb_runner_bench [--runs N] [--step-runs N] [--loop-runs N] [--worst-runs N] "
          "[--runner PATH] [--tools PATH]\n");
      return 0;
    }
  }
  const int start_runs = int_flag(argc, argv, "--runs", 100);
  const int step_runs = int_flag(argc, argv, "--step-runs", 20);
  const int loop_runs = int_flag(argc, argv, "--loop-runs", 500);
  const int worst_runs = int_flag(argc, argv, "--worst-runs", 3);
  const std::string runner = string_flag(argc, argv, "--runner", HB_RUNNER_BINARY);
  const std::string tools = string_flag(argc, argv, "--tools", HB_TOOLS_BINARY);

  RunnerHarness h(runner, tools);
  // Warm the page cache and the fake server before sampling.
  for (int i = 0; i < 3; ++i) {
    h.server().push(FakeModelServer::openai_text("warm"));
    check(h.run(), 1);
  }

  // (a) process start to first model request, and the 1-step run as a whole,
  // with the tools server started beside the runner (as in a Pod) and, for
  // comparison, without one (the runner before the tools container).
  std::vector<double> first_request_ms, one_step_rss, one_step_wall, one_step_cpu, tools_rss;
  std::vector<double> first_request_alone_ms, first_request_traced_ms, one_step_traced_rss;
  std::vector<double> traced_minus_off_ms;
  // (e) interleaved with (a): each tracing-off run has a tracing-on twin,
  // which runs first every other time.
  for (int r = 0; r < start_runs; ++r) {
    const Tracing first_twin = r % 2 == 0 ? Tracing::kOff : Tracing::kOn;
    const Tracing second_twin = r % 2 == 0 ? Tracing::kOn : Tracing::kOff;
    std::optional<double> off_ms, on_ms;
    for (auto [where, tracing] :
         {std::pair{Tools::kContainer, first_twin}, std::pair{Tools::kContainer, second_twin},
          std::pair{Tools::kInProcess, Tracing::kOff}}) {
      std::size_t before = h.server().requests().size();
      h.server().push(FakeModelServer::openai_text("done"));
      ChildRun run = h.run(where, tracing);
      auto requests = h.server().requests();
      if (!check(run, 1) || requests.size() <= before) continue;
      const double first = ms_between(run.spawned, requests[before].received);
      if (where == Tools::kInProcess) {
        first_request_alone_ms.push_back(first);
        continue;
      }
      if (tracing == Tracing::kOn) {
        on_ms = first;
        first_request_traced_ms.push_back(first);
        one_step_traced_rss.push_back(run.max_rss_mib);
        continue;
      }
      off_ms = first;
      first_request_ms.push_back(first);
      one_step_rss.push_back(run.max_rss_mib);
      one_step_wall.push_back(run.wall_ms);
      one_step_cpu.push_back(run.cpu_ms);
      tools_rss.push_back(run.tools_max_rss_mib);
    }
    if (off_ms && on_ms) traced_minus_off_ms.push_back(*on_ms - *off_ms);
  }

  // (b) 10-step runs: 9 shell calls (`echo`, a real /bin/sh each), then the answer.
  StepRuns shell = ten_step_runs(h, step_runs, "shell");
  // For comparison: the same commands run by the runner itself (HEARTBEAT_TOOLS_LOCAL=1).
  StepRuns shell_local = ten_step_runs(h, step_runs, "shell", Tools::kInProcess);
  // (c) the same 10 steps with a tool react_agent is not offered: each call is
  // refused with a tool error and nothing runs, so the step is the runner's
  // own work (HTTP to 127.0.0.1, decode, transcript, prompt, encode).
  StepRuns refused = ten_step_runs(h, step_runs, "core_memory_append");
  StepRuns traced = ten_step_runs(h, step_runs, "shell", Tools::kContainer, Tracing::kOn);
  std::vector<double> loop_ms = in_process_loop_per_step_ms(h.context_text(), loop_runs);
  WorstRuns worst = worst_case_runs(h, worst_runs);

  double load[3] = {0, 0, 0};
  ::getloadavg(load, 3);
  std::printf("heartbeat-runner benchmark\n");
  std::printf("  runner: %s\n", runner.c_str());
  std::printf("  context document: %zu bytes; fake OpenAI-compatible server on 127.0.0.1\n",
              h.context_text().size());
  std::printf("  cores online: %ld; load average before printing: %.2f %.2f %.2f\n",
              ::sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1], load[2]);
  std::printf("\n");
  std::printf("| %-52s | %-4s | %5s | %8s | %8s | %8s | %8s | %-7s | %-7s |\n", "measure", "unit",
              "n", "p50", "p99", "max", "mean", "goal", "verdict");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(54, '-').c_str(),
              std::string(6, '-').c_str(), std::string(7, '-').c_str(),
              std::string(10, '-').c_str(), std::string(10, '-').c_str(),
              std::string(10, '-').c_str(), std::string(10, '-').c_str(),
              std::string(9, '-').c_str(), std::string(9, '-').c_str());
  row("(a) spawn -> first model request, tools container", "ms", stats_of(first_request_ms),
      kStartToFirstRequestMsGoal);
  row("    the same without a tools container", "ms", stats_of(first_request_alone_ms), 0);
  row("    tools server peak RSS (idle, 1-step run)", "MiB", stats_of(tools_rss), 0);
  row("(b) peak RSS, 10-step run (9 shell calls + answer)", "MiB", stats_of(shell.rss_mib),
      kPeakRssMibGoal);
  row("(c) loop overhead per step, in process", "ms", stats_of(loop_ms),
      kLoopOverheadPerStepMsGoal);
  row("(c) per step in binary, tool refused (HTTP incl.)", "ms", stats_of(refused.step_ms),
      kLoopOverheadPerStepMsGoal);
  row("    per step in the binary, shell `echo` tool", "ms", stats_of(shell.step_ms), 0);
  row("    the same, run in the runner (TOOLS_LOCAL=1)", "ms", stats_of(shell_local.step_ms), 0);
  row("    peak RSS, 1-step run", "MiB", stats_of(one_step_rss), 0);
  row("    CPU time (user+sys), whole 1-step run", "ms", stats_of(one_step_cpu), 0);
  row("    wall time, 1-step run (spawn -> exit)", "ms", stats_of(one_step_wall), 0);
  row("    wall time, 10-step run with shell calls", "ms", stats_of(shell.wall_ms), 0);
  row("    tools server peak RSS, 10-step run", "MiB", stats_of(shell.tools_rss_mib), 0);
  row("(d) peak RSS, replies of 32 calls x 16 KiB ctrl", "MiB", stats_of(worst.many_calls_rss),
      kWorstPeakRssMibGoal);
  row("(d) peak RSS, replies at the reply-bytes cap", "MiB", stats_of(worst.huge_reply_rss),
      kWorstPeakRssMibGoal);
  row("(e) spawn -> first model request, tracing on", "ms", stats_of(first_request_traced_ms),
      kStartToFirstRequestMsGoal);
  difference_row("(e) the same, on minus its tracing-off twin", stats_of(traced_minus_off_ms),
                 kTracingStartCostMsGoal);
  row("(e) peak RSS, 1-step run, tracing on", "MiB", stats_of(one_step_traced_rss),
      kPeakRssMibGoal);
  row("(e) peak RSS, 10-step run, tracing on", "MiB", stats_of(traced.rss_mib), kPeakRssMibGoal);
  std::printf("\n(d) stop reasons: many calls %s, huge reply %s\n", worst.many_calls_stop.c_str(),
              worst.huge_reply_stop.c_str());
  std::printf(
      "\nverdict: \"met\" when the max is within the goal, \"p50 met\" when only the median is.\n"
      "Per-step times in the binary are the gaps between consecutive model requests at the\n"
      "fake server, which answers at once. Wall-clock rows depend on the machine's load (see\n"
      "the load average above); the CPU-time row much less. The 1-step run's wall time\n"
      "includes the runner's exit.\n");
  return 0;
}
