// End to end across the contract: the operator's real render path puts
// earlier runs into the context document, the runner's real parser and
// prompt builder put them in front of the model, in the order the prompt
// claims (oldest first; docs/context-document.md).
#include <gtest/gtest.h>

#include "api/context_document.h"
#include "controllers/pod/job_builder.h"
#include "runner/prompt.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb {
namespace {

using controllers::Json;
using controllers::testing::agent;
using controllers::testing::at;
using controllers::testing::run;
using controllers::testing::with_status;

Json finished_run(int minute) {
  const std::string stamp =
      "2024-05-01T11:" + std::string(minute < 10 ? "0" : "") + std::to_string(minute) + ":00Z";
  return with_status(run("bot-at-" + std::to_string(minute)),
                     {{"phase", "Succeeded"},
                      {"finishedAt", stamp},
                      {"stopReason", "completed"},
                      {"output", "output of minute " + std::to_string(minute)}});
}

std::string prompt_for(const std::vector<Json>& history, int context_runs) {
  Json a = agent();
  a["spec"]["heartbeat"]["contextRuns"] = context_runs;
  const Json r = run("bot-now");
  std::vector<const Json*> ptrs;
  for (const Json& h : history) ptrs.push_back(&h);
  const controllers::ContextInput in{nullptr, nullptr, "What now?", controllers::earlier_runs(ptrs),
                                     at("2024-05-01T12:00:00Z")};
  const std::string text = controllers::testing::render_stored(a, r, in).dump();
  return runner::render_heartbeat_message(api::parse_context_document_text(text).value());
}

TEST(EarlierOutputs, TheModelReadsThemOldestFirstAsThePromptSays) {
  // Handed to the operator in no particular order, as a cache lists them.
  const std::vector<Json> history = {finished_run(30), finished_run(5), finished_run(50),
                                     finished_run(10), finished_run(40)};
  const std::string prompt = prompt_for(history, 3);
  ASSERT_NE(prompt.find("(oldest first)"), std::string::npos) << prompt;
  // The three newest, in the order they finished.
  const std::size_t p30 = prompt.find("output of minute 30");
  const std::size_t p40 = prompt.find("output of minute 40");
  const std::size_t p50 = prompt.find("output of minute 50");
  ASSERT_NE(p30, std::string::npos) << prompt;
  ASSERT_NE(p40, std::string::npos) << prompt;
  ASSERT_NE(p50, std::string::npos) << prompt;
  EXPECT_LT(p30, p40);
  EXPECT_LT(p40, p50);
  EXPECT_EQ(prompt.find("output of minute 5\n"), std::string::npos) << "older than contextRuns";
  EXPECT_EQ(prompt.find("output of minute 10"), std::string::npos) << "older than contextRuns";
  // Then the heartbeat prompt itself, last.
  EXPECT_GT(prompt.find("What now?"), p50);
}

TEST(EarlierOutputs, FinishedAtDecidesNotTheName) {
  // Names that sort the other way round from their finish times.
  Json early = finished_run(1);
  early["metadata"]["name"] = "bot-zzz";
  Json late = finished_run(2);
  late["metadata"]["name"] = "bot-aaa";
  const std::string prompt = prompt_for({late, early}, 5);
  EXPECT_LT(prompt.find("--- bot-zzz"), prompt.find("--- bot-aaa")) << prompt;
}

TEST(EarlierOutputs, NoneGiveJustThePrompt) {
  EXPECT_EQ(prompt_for({}, 3), "What now?");
}

// A wakeup's metadata reaches the model from the run's spec: usable entries
// only (a kubectl-made run may hold keys the schema cannot refuse), one line.
TEST(WakeupMetadata, TheRunsMetadataReachesThePromptOnOneLine) {
  const Json a = agent();
  Json r = run("bot-now", "callback");
  r["spec"]["metadata"] = {{"taskId", "T-42"}, {"note", "two\nlines"}, {"bad key", "x"}};
  const controllers::ContextInput in{nullptr, nullptr, "What now?", {}, at("2024-05-01T12:00:00Z")};
  const std::string text = controllers::testing::render_stored(a, r, in).dump();
  const api::ContextDocument doc = api::parse_context_document_text(text).value();
  const std::string prompt = runner::render_system_prompt(doc, {}, {}, at("2024-05-01T12:00:00Z"));
  EXPECT_NE(prompt.find("- metadata: note=two lines; taskId=T-42\n"), std::string::npos) << prompt;
  EXPECT_EQ(prompt.find("bad key"), std::string::npos);
}

}  // namespace
}  // namespace hb
