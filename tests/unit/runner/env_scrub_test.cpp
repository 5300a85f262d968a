// The API key leaves no trace in /proc/PID/environ once the runner took it.
// The variable must be in the environment block a process starts with, so
// the test binary runs itself again with the key in its environment.
#include "runner/env_scrub.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace hb::runner {
namespace {

constexpr const char* kChildFlag = "HB_ENV_SCRUB_CHILD";
constexpr const char* kSecretName = "HB_TEST_SECRET_KEY";
constexpr const char* kSecretValue = "sk-scrub-me-4242";

std::string self_environ() {
  std::ifstream in("/proc/self/environ");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// In the child: take the key, then report whether the block still holds it.
TEST(EnvScrub, Child) {
  if (std::getenv(kChildFlag) == nullptr) GTEST_SKIP() << "only in the re-executed child";
  const bool before = self_environ().find(kSecretValue) != std::string::npos;
  auto value = take_secret_env(kSecretName);
  const bool after = self_environ().find(kSecretValue) != std::string::npos;
  std::printf("before=%d value=%s after=%d getenv=%d\n", before, value ? value->c_str() : "-",
              after, std::getenv(kSecretName) != nullptr);
}

TEST(EnvScrub, TheValueIsGoneFromTheKernelsCopyOfTheEnvironment) {
  if (std::getenv(kChildFlag) != nullptr) GTEST_SKIP() << "the parent's test";
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  const std::string command = std::string(kChildFlag) + "=1 " + kSecretName + "=" + kSecretValue +
                              " " + self + " --gtest_filter=EnvScrub.Child 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  // The block held it at start, the runner got the value, and then neither
  // /proc/self/environ nor getenv shows it.
  EXPECT_NE(out.find(std::string("before=1 value=") + kSecretValue + " after=0 getenv=0"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace hb::runner
