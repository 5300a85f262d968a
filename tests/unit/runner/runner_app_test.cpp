// run_heartbeat end to end: context file in, fake model server, result file out.
#include "runner/runner_app.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/exit_codes.h"
#include "api/rfc3339.h"
#include "api/utf8.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_model_server.h"
#include "tests/fakes/memory_store_fake.h"

namespace hb::runner {
namespace {

using fakes::FakeClock;
using fakes::FakeModelServer;
using nlohmann::json;
using namespace std::chrono_literals;

class RecordingRenewer final : public LeaseRenewer {
 public:
  kube::Done renew(TimePoint now, std::chrono::seconds, const api::UsageReport*) override {
    renewals->push_back(now);
    return kube::done();
  }
  std::vector<TimePoint>* renewals;
};

class AppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hb-app-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    options_.context_path = (dir_ / "context.json").string();
    options_.termination_path = (dir_ / "termination-log").string();
    options_.api_key = "sk-app-test-key-123";
    options_.model_call_timeout = 5s;
    options_.tools_local = true;  // no tools container in a unit test
    context_ = json::parse(R"({
      "agent": {"name": "scout", "namespace": "agents", "type": "memgpt_agent"},
      "model": {"provider": "openai", "model": "fake", "maxTokens": 256,
                "pricing": {"inputCentsPerMillionTokens": 100, "outputCentsPerMillionTokens": 200}},
      "persona": "You are Scout.",
      "memory": {"configMapName": "scout-memory", "blocks": [{"label": "notes", "value": "", "limit": 100}]},
      "heartbeat": {"prompt": "Check the disk."},
      "recentRuns": [{"name": "scout-1", "output": "disk 70% full", "finishedAt": "2024-05-01T11:00:00Z"}],
      "run": {"name": "scout-2"},
      "lease": {"name": "scout-heartbeat", "durationSeconds": 300, "renewIntervalSeconds": 60}
    })");
    context_["model"]["baseURL"] = server_.url() + "/v1";
    context_["run"]["deadline"] = api::format_rfc3339_millis(clock_.now() + 10min);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  AppOutcome run() {
    std::ofstream(options_.context_path) << context_.dump();
    AppDeps deps{clock_,
                 stdout_,
                 *http_,
                 [this](const api::ContextDocument&) -> std::unique_ptr<LeaseRenewer> {
                   auto renewer = std::make_unique<RecordingRenewer>();
                   renewer->renewals = &renewals_;
                   return renewer;
                 },
                 [this](const api::ContextDocument&) -> std::unique_ptr<MemoryStore> {
                   return std::make_unique<StoreRef>(store_);
                 },
                 nullptr,
                 nullptr,
                 nullptr,
                 nullptr,
                 [this] { return stderr_text_; }};
    return run_heartbeat(options_, deps);
  }
  std::string termination_log() {
    std::ifstream in(options_.termination_path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::vector<json> transcript() {
    std::vector<json> lines;
    std::istringstream in(stdout_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
    return lines;
  }

  class StoreRef final : public MemoryStore {
   public:
    explicit StoreRef(fakes::FakeMemoryStore& store) : store_(store) {}
    kube::Result<std::optional<MemorySnapshot>> load() override { return store_.load(); }
    kube::Result<std::string> save(const MemoryBlocks& b, const std::string& v) override {
      return store_.save(b, v);
    }

   private:
    fakes::FakeMemoryStore& store_;
  };

  FakeModelServer server_;
  FakeClock clock_;
  std::unique_ptr<http::Client> http_ = http::make_client({});
  std::ostringstream stdout_;
  std::filesystem::path dir_;
  AppOptions options_;
  json context_;
  std::vector<TimePoint> renewals_;
  fakes::FakeMemoryStore store_;
  std::string stderr_text_;
};

TEST_F(AppTest, ToolLoopWithMemoryEditWritesResultAndTranscript) {
  server_.push(FakeModelServer::openai_tool_calls(
      {{"c1", "core_memory_append", R"({"label":"notes","content":"disk 80% on May 1"})"}}));
  server_.push(
      FakeModelServer::openai_tool_calls({{"c2", "shell", R"({"command":"echo checked"})"}}));
  server_.push(
      FakeModelServer::openai_tool_calls({{"c3", "pause_heartbeats", R"({"minutes":30})"}}));
  auto outcome = run();
  EXPECT_EQ(outcome.exit_code, api::kExitFinished);
  auto result = json::parse(termination_log());
  EXPECT_EQ(result["stopReason"], "pause_heartbeats");
  EXPECT_EQ(result["pauseMinutes"], 30);
  EXPECT_EQ(result["usage"]["llmCalls"], 3);
  EXPECT_EQ(result["usage"]["toolCalls"], 3);
  EXPECT_GT(result["usage"]["costCents"].get<double>(), 0);
  ASSERT_TRUE(result.contains("notes"));
  EXPECT_NE(result["notes"].dump().find("not offered"), std::string::npos) << "no archival storage";
  EXPECT_EQ(store_.blocks.at(0).value, "disk 80% on May 1");
  EXPECT_FALSE(renewals_.empty());
  // The model saw the persona, memory, the earlier run and the prompt.
  auto first = server_.requests()[0].json();
  std::string system = first["messages"][0]["content"];
  EXPECT_NE(system.find("You are Scout."), std::string::npos);
  EXPECT_NE(system.find("chars_current=0 chars_limit=100"), std::string::npos);
  std::string user = first["messages"][1]["content"];
  EXPECT_NE(user.find("disk 70% full"), std::string::npos);
  EXPECT_NE(user.find("Check the disk."), std::string::npos);
  EXPECT_EQ(first["tools"].size(), 4u);
  // The second request shows the edited memory.
  std::string second_system = server_.requests()[1].json()["messages"][0]["content"];
  EXPECT_NE(second_system.find("disk 80% on May 1"), std::string::npos);
  // Transcript: JSON lines, no API key anywhere.
  auto lines = transcript();
  ASSERT_GE(lines.size(), 8u);
  EXPECT_EQ(lines.front()["event"], "run_started");
  EXPECT_EQ(lines.back()["event"], "result");
  EXPECT_EQ(stdout_.str().find("sk-app-test-key-123"), std::string::npos);
  EXPECT_EQ(termination_log().find("sk-app-test-key-123"), std::string::npos);
}

TEST_F(AppTest, ArchivalStorageOffersAllSevenTools) {
  context_["archival"] = {{"path", (dir_ / "archival.db").string()}};
  server_.push(
      FakeModelServer::openai_tool_calls({{"c1", "conversation_search", R"({"query":"disk"})"}}));
  server_.push(FakeModelServer::openai_text("Disk was 70% last time."));
  auto outcome = run();
  EXPECT_EQ(outcome.exit_code, api::kExitFinished);
  EXPECT_EQ(server_.requests()[0].json()["tools"].size(), 7u);
  std::string answer = server_.requests()[1].json()["messages"][3]["content"];
  EXPECT_NE(answer.find("disk 70% full"), std::string::npos) << answer;
  EXPECT_NE(answer.find("scout-1"), std::string::npos);
}

// An archival path the store cannot open: the heartbeat runs without the
// archival tools, and the result says why.
TEST_F(AppTest, AnArchivalStoreThatCannotOpenIsANote) {
  const std::string path = (dir_ / "no-such-dir" / "archival.db").string();
  context_["archival"] = {{"path", path}};
  server_.push(FakeModelServer::openai_text("Disk fine."));
  auto outcome = run();
  EXPECT_EQ(outcome.exit_code, api::kExitFinished);
  EXPECT_EQ(server_.requests()[0].json()["tools"].size(), 4u) << "no archival tools";
  const auto& notes = outcome.result.notes;
  EXPECT_NE(std::find(notes.begin(), notes.end(),
                      "archival storage unavailable: archival store " + path +
                          ": cannot open: unable to open database file"),
            notes.end())
      << json(notes).dump();
}

// A document that is not JSON: a config error whose message is the parser's.
TEST_F(AppTest, AContextDocumentThatIsNotJsonIsAConfigError) {
  AppDeps deps{clock_,  stdout_, *http_,  nullptr, nullptr,
               nullptr, nullptr, nullptr, nullptr, nullptr};
  std::ofstream(options_.context_path) << "{\"agent\": ";
  auto outcome = run_heartbeat(options_, deps);
  EXPECT_EQ(outcome.exit_code, api::kExitConfigError);
  EXPECT_EQ(outcome.result.error.rfind("context document: (document): is not valid JSON: ", 0), 0u)
      << outcome.result.error;
}

TEST_F(AppTest, ConfigErrorExitsWithItsCodeAndNamesTheField) {
  context_["agent"]["type"] = "super_agent";
  auto outcome = run();
  EXPECT_EQ(outcome.exit_code, api::kExitConfigError);
  auto result = json::parse(termination_log());
  EXPECT_EQ(result["stopReason"], "config_error");
  EXPECT_NE(result["error"].get<std::string>().find("agent.type"), std::string::npos);
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(AppTest, MissingContextFileIsAConfigError) {
  options_.context_path = (dir_ / "nope.json").string();
  AppDeps deps{clock_,  stdout_, *http_,  nullptr, nullptr,
               nullptr, nullptr, nullptr, nullptr, nullptr};
  auto outcome = run_heartbeat(options_, deps);
  EXPECT_EQ(outcome.exit_code, api::kExitConfigError);
}

TEST_F(AppTest, ProviderFailureExitsWithItsCode) {
  server_.push(FakeModelServer::error(
      401, R"({"error":{"message":"bad key","type":"invalid_request_error"}})"));
  auto outcome = run();
  EXPECT_EQ(outcome.exit_code, api::kExitProviderError);
  auto result = json::parse(termination_log());
  EXPECT_EQ(result["stopReason"], "provider_error");
  EXPECT_NE(result["error"].get<std::string>().find("401"), std::string::npos);
}

TEST_F(AppTest, HugeModelOutputStillFitsTheTerminationMessage) {
  std::string huge;
  for (int i = 0; i < 20000; ++i) huge += "line \"" + std::to_string(i) + "\"\n";
  server_.push(FakeModelServer::openai_text(huge));
  auto outcome = run();
  EXPECT_EQ(outcome.exit_code, api::kExitFinished);
  std::string text = termination_log();
  EXPECT_LE(text.size(), api::kTerminationMessageBytesMax);
  auto result = json::parse(text);
  EXPECT_EQ(result["outputTruncated"], true);
  EXPECT_EQ(result["outputBytes"], huge.size());
  // The transcript keeps the whole output.
  EXPECT_NE(stdout_.str().find("line \\\"19999\\\""), std::string::npos);
}

TEST_F(AppTest, AnthropicNeedsAKey) {
  context_["model"]["provider"] = "anthropic";
  options_.api_key.clear();
  EXPECT_EQ(run().exit_code, api::kExitConfigError);
}

// Run logs: the result carries the ends of stdout and stderr, and with an
// archival volume the whole transcript is stored, gzip, with its size and
// digest; transcripts of runs the operator no longer keeps are deleted.
TEST_F(AppTest, TheTranscriptIsStoredWithItsDigestAndTheResultCarriesExcerpts) {
  const std::filesystem::path dir = dir_ / "transcripts";
  std::filesystem::create_directories(dir);
  for (const char* name : {"scout-0.jsonl.gz", "scout-1.jsonl.gz", "notes.txt"}) {
    std::ofstream(dir / name) << "old";
  }
  context_["transcripts"] = {{"dir", dir.string()}, {"keep", {"scout-1"}}};
  stderr_text_ = std::string(600, 'x') + "the end of stderr";
  server_.push(FakeModelServer::openai_text("All quiet on the disk front."));
  auto outcome = run();
  EXPECT_EQ(outcome.exit_code, api::kExitFinished);
  const json result = json::parse(termination_log());

  EXPECT_FALSE(std::filesystem::exists(dir / "scout-0.jsonl.gz"));  // its run is gone
  EXPECT_TRUE(std::filesystem::exists(dir / "scout-1.jsonl.gz"));   // kept
  EXPECT_TRUE(std::filesystem::exists(dir / "notes.txt"));          // not ours
  const std::filesystem::path file = dir / "scout-2.jsonl.gz";
  ASSERT_TRUE(std::filesystem::exists(file));
  ASSERT_TRUE(result.contains("transcript")) << result.dump(2);
  EXPECT_EQ(result["transcript"]["bytes"], std::filesystem::file_size(file));
  EXPECT_EQ(result["transcript"]["compressed"], true);
  EXPECT_EQ(result["transcript"]["truncated"], false);
  const std::string sha = result["transcript"]["sha256"];
  const std::string check = "sha256sum " + file.string() + " | cut -c1-64";
  std::string expected(64, ' ');
  FILE* pipe = ::popen(check.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  ASSERT_EQ(std::fread(expected.data(), 1, 64, pipe), 64u);
  ::pclose(pipe);
  EXPECT_EQ(sha, expected);
  // The file is the transcript: the same events as stdout, ending with the result.
  FILE* unzip = ::popen(("gzip -dc " + file.string()).c_str(), "r");
  std::string lines;
  for (char buffer[4096]; std::size_t n = std::fread(buffer, 1, sizeof buffer, unzip);) {
    lines.append(buffer, n);
  }
  ::pclose(unzip);
  EXPECT_NE(lines.find("\"event\":\"run_started\""), std::string::npos);
  EXPECT_NE(lines.find("All quiet on the disk front."), std::string::npos);
  EXPECT_NE(lines.rfind("\"event\":\"result\""), std::string::npos);

  const std::string out = result["stdoutExcerpt"];
  EXPECT_LE(api::utf8_length(out), api::kLogExcerptCharsMax);
  EXPECT_TRUE(stdout_.str().find(out) != std::string::npos);  // its end, verbatim
  const std::string err = result["stderrExcerpt"];
  EXPECT_EQ(api::utf8_length(err), api::kLogExcerptCharsMax);
  EXPECT_TRUE(err.ends_with("the end of stderr"));
  EXPECT_LE(termination_log().size(), api::kTerminationMessageBytesMax);
}

}  // namespace
}  // namespace hb::runner
