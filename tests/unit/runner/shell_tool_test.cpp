#include "runner/shell_tool.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "runner/output_capture.h"

namespace hb::runner {
namespace {

using namespace std::chrono_literals;

TEST(OutputCapture, KeepsHeadAndTail) {
  OutputCapture capture(4, 4);
  capture.append("0123");
  capture.append("456789");
  capture.append("ABCDEFGH");
  EXPECT_TRUE(capture.truncated());
  EXPECT_EQ(capture.total_bytes(), 18u);
  EXPECT_EQ(capture.text(), "0123\n[... 10 bytes omitted ...]\nEFGH");
  OutputCapture small(4, 4);
  small.append("abcdef");
  EXPECT_FALSE(small.truncated());
  EXPECT_EQ(small.text(), "abcdef");
}

TEST(OutputCapture, ManySmallAppendsStayBounded) {
  OutputCapture capture(10, 10);
  for (int i = 0; i < 100000; ++i) capture.append("x");
  EXPECT_LT(capture.text().size(), 64u);
}

TEST(ShellTool, ExitCodeAndMergedOutput) {
  ShellOptions options;
  auto result = run_shell("echo out; echo err 1>&2; exit 3", options);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_FALSE(result.timed_out);
  EXPECT_NE(result.output.find("out"), std::string::npos);
  EXPECT_NE(result.output.find("err"), std::string::npos);
  auto text = format_shell_result(result);
  EXPECT_EQ(text.rfind("exit_code: 3\n", 0), 0u) << text;
}

TEST(ShellTool, TimeoutKillsTheProcessGroup) {
  ShellOptions options;
  options.timeout = 300ms;
  auto started = std::chrono::steady_clock::now();
  auto result = run_shell("sleep 30 & sleep 30", options);
  EXPECT_TRUE(result.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_NE(format_shell_result(result).find("timed out"), std::string::npos);
}

TEST(ShellTool, TermIgnoredThenKilled) {
  ShellOptions options;
  options.timeout = 200ms;
  options.kill_grace = 200ms;
  auto result = run_shell("trap '' TERM; sleep 30", options);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.exit_code, -1);
}

TEST(ShellTool, BackgroundChildDoesNotHoldTheCall) {
  ShellOptions options;
  options.timeout = 10s;
  auto started = std::chrono::steady_clock::now();
  auto result = run_shell("sleep 30 & echo started", options);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

TEST(ShellTool, LongOutputKeepsHeadAndTail) {
  ShellOptions options;
  options.head_bytes = 100;
  options.tail_bytes = 100;
  auto result = run_shell("echo FIRST; seq 1 100000; echo LAST", options);
  EXPECT_TRUE(result.truncated);
  EXPECT_GT(result.output_bytes, 500000u);
  EXPECT_EQ(result.output.rfind("FIRST", 0), 0u);
  EXPECT_NE(result.output.find("LAST"), std::string::npos);
  EXPECT_LT(result.output.size(), 300u);
}

TEST(ShellTool, BeatsOnlyWhileItMakesProgress) {
  ShellOptions options;
  options.beat_interval = 50ms;
  int beats = 0;
  options.beat = [&] { ++beats; };
  run_shell("sleep 0.4", options);
  EXPECT_EQ(beats, 0) << "a silent, idle command is no progress";
  run_shell("for i in 1 2 3 4 5 6 7 8; do echo $i; sleep 0.1; done", options);
  EXPECT_GE(beats, 3);
  beats = 0;
  long long ticks = 0;
  options.cpu_ticks = [&] { return ++ticks; };  // CPU time that keeps moving
  run_shell("sleep 0.4", options);
  EXPECT_GE(beats, 3);
}

TEST(ShellTool, SecretEnvironmentIsRemoved) {
  ::setenv("HB_TEST_SECRET", "hunter2", 1);
  ShellOptions options;
  options.env_remove = {"HB_TEST_SECRET"};
  auto result = run_shell("echo \"[$HB_TEST_SECRET]\"; echo \"$HOME\" >/dev/null", options);
  EXPECT_NE(result.output.find("[]"), std::string::npos) << result.output;
  ::unsetenv("HB_TEST_SECRET");
}

TEST(ShellTool, CancelStopsTheCommand) {
  ShellOptions options;
  options.cancelled = [] { return true; };
  auto result = run_shell("sleep 30", options);
  EXPECT_EQ(result.exit_code, -1);
}

}  // namespace
}  // namespace hb::runner
