// The GenAI client metrics from the ledger's charges: the conventions'
// names and buckets, each run once, and the bounded label values.
#include "controllers/runtime/genai_metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace hb::controllers {
namespace {

int lines_starting(const std::string& text, const std::string& prefix) {
  int n = 0;
  for (std::size_t at = text.find("\n" + prefix); at != std::string::npos;
       at = text.find("\n" + prefix, at + 1)) {
    ++n;
  }
  return n;
}

constexpr const char* kInputSeries =
    R"(gen_ai_operation_name="invoke_agent",gen_ai_provider_name="openai",)"
    R"(gen_ai_request_model="gpt-4o-mini",gen_ai_token_type="input")";

TEST(GenAiChargeMetrics, TheTokenHistogramHasTheConventionsNameAndBuckets) {
  Metrics metrics;
  GenAiChargeMetrics genai(metrics, false);
  genai.record({"ns/bot-1", "openai", "gpt-4o-mini", 1200, 30});
  genai.record({"ns/bot-2", "openai", "gpt-4o-mini", 70000, 5});
  const std::string text = metrics.render();
  EXPECT_NE(text.find("# TYPE gen_ai_client_token_usage histogram"), std::string::npos) << text;
  for (const char* bound : {"1", "4", "16", "64", "256", "1024", "4096", "16384", "65536", "262144",
                            "1048576", "4194304", "16777216", "67108864", "+Inf"}) {
    const std::string bucket =
        std::string("gen_ai_client_token_usage_bucket{") + kInputSeries + ",le=\"" + bound + "\"}";
    EXPECT_NE(text.find(bucket), std::string::npos) << bucket;
  }
  EXPECT_NE(text.find(std::string("gen_ai_client_token_usage_bucket{") + kInputSeries +
                      ",le=\"4096\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(std::string("gen_ai_client_token_usage_sum{") + kInputSeries + "} 71200\n"),
            std::string::npos);
  EXPECT_NE(text.find(std::string("gen_ai_client_token_usage_count{") + kInputSeries + "} 2\n"),
            std::string::npos);
  EXPECT_EQ(text.find("gen_ai_client_inference"), std::string::npos)
      << "the successors only when opted in";
  EXPECT_EQ(text.find("gen_ai_client_operation_duration_seconds_bucket"), std::string::npos)
      << "no series for runs without believed call durations";
}

constexpr const char* kChatSeries = R"(gen_ai_operation_name="chat",gen_ai_provider_name="openai",)"
                                    R"(gen_ai_request_model="gpt-4o-mini")";

std::string duration_line(const std::string& suffix, const std::string& le = "") {
  return std::string("gen_ai_client_operation_duration_seconds_") + suffix + "{" + kChatSeries +
         (le.empty() ? "" : ",le=\"" + le + "\"") + "} ";
}

// The runner's summary, believed when the run finished, becomes the
// duration histogram once per run: a charge repeated after a failed mark,
// or seen again on later passes, adds nothing.
TEST(GenAiChargeMetrics, TheDurationHistogramIsObservedOncePerRun) {
  Metrics metrics;
  GenAiChargeMetrics genai(metrics, false);
  api::CallDurations durations;
  api::add_call(durations, 0.5);
  api::add_call(durations, 3.0);
  for (int pass = 0; pass < 3; ++pass) {
    genai.record({"ns/bot-1", "openai", "gpt-4o-mini", 10, 2, durations});
  }
  const std::string text = metrics.render();
  EXPECT_NE(text.find("# TYPE gen_ai_client_operation_duration_seconds histogram"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(duration_line("bucket", "0.32") + "0\n"), std::string::npos) << text;
  EXPECT_NE(text.find(duration_line("bucket", "0.64") + "1\n"), std::string::npos) << text;
  EXPECT_NE(text.find(duration_line("bucket", "5.12") + "2\n"), std::string::npos) << text;
  EXPECT_NE(text.find(duration_line("bucket", "+Inf") + "2\n"), std::string::npos) << text;
  EXPECT_NE(text.find(duration_line("sum") + "3.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find(duration_line("count") + "2\n"), std::string::npos) << text;
  EXPECT_EQ(lines_starting(text, "gen_ai_client_operation_duration_seconds_count"), 1);

  // A second run adds its calls to the same series.
  genai.record({"ns/bot-2", "openai", "gpt-4o-mini", 10, 2, durations});
  EXPECT_NE(metrics.render().find(duration_line("count") + "4\n"), std::string::npos);
}

// A failed call is observed too, under its error type (error.type as the
// error_type label); the answered calls' series carries no error_type.
TEST(GenAiChargeMetrics, AFailedCallsDurationIsObservedWithItsErrorType) {
  Metrics metrics;
  GenAiChargeMetrics genai(metrics, false);
  api::CallDurations durations;
  api::add_call(durations, 0.5);
  api::add_failed_call(durations, api::CallErrorType::kTimeout, 60.0);
  api::add_failed_call(durations, api::CallErrorType::kServerError, 0.1);
  genai.record({"ns/bot-1", "openai", "gpt-4o-mini", 10, 2, durations});
  genai.record({"ns/bot-1", "openai", "gpt-4o-mini", 10, 2, durations});  // charged again
  const std::string text = metrics.render();
  const std::string timeout = std::string("gen_ai_client_operation_duration_seconds_count{") +
                              kChatSeries + R"(,error_type="timeout"} )";
  EXPECT_NE(text.find(timeout + "1\n"), std::string::npos) << text;
  EXPECT_NE(text.find(std::string("gen_ai_client_operation_duration_seconds_bucket{") +
                      kChatSeries + R"(,error_type="timeout",le="40.96"} 0)" + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(std::string("gen_ai_client_operation_duration_seconds_sum{") + kChatSeries +
                      R"(,error_type="timeout"} 60)" + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(std::string("gen_ai_client_operation_duration_seconds_count{") + kChatSeries +
                      R"(,error_type="5xx"} 1)" + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(duration_line("count") + "1\n"), std::string::npos) << "answered: " << text;
  // Only types with calls get series: answered, timeout and 5xx.
  EXPECT_EQ(lines_starting(text, "gen_ai_client_operation_duration_seconds_count"), 3) << text;
  EXPECT_EQ(text.find("error_type=\"4xx\""), std::string::npos) << text;
}

TEST(GenAiChargeMetrics, TheDurationHistogramStaysBesideTheOptedInSuccessors) {
  Metrics metrics;
  GenAiChargeMetrics genai(metrics, true);
  api::CallDurations durations;
  api::add_call(durations, 0.02);
  genai.record({"ns/bot-1", "openai", "gpt-4o-mini", 10, 2, durations});
  EXPECT_NE(metrics.render().find(duration_line("count") + "1\n"), std::string::npos)
      << metrics.render();
}

TEST(GenAiChargeMetrics, ARunChargedAgainIsCountedOnce) {
  Metrics metrics;
  GenAiChargeMetrics genai(metrics, false);
  for (int i = 0; i < 3; ++i) genai.record({"ns/bot-1", "anthropic", "claude", 10, 2});
  EXPECT_NE(metrics.render().find(R"(gen_ai_request_model="claude",gen_ai_token_type="output"} 1)"),
            std::string::npos)
      << metrics.render();
}

TEST(GenAiChargeMetrics, ModelsBeyondTheBoundShareTheOtherValue) {
  Metrics metrics;
  GenAiChargeMetrics genai(metrics, false);
  for (std::size_t i = 0; i < kGenAiModelsMax + 10; ++i) {
    genai.record({"ns/run-" + std::to_string(i), "openai", "model-" + std::to_string(i), 1, 1});
  }
  genai.record({"ns/long", "openai", std::string(kGenAiLabelValueBytesMax + 1, 'm'), 1, 1});
  genai.record({"ns/gone", "", "", 1, 1});                // the Agent was deleted
  genai.record({"ns/odd", "acme", "model-0", 1, 1});      // not a provider the operator knows
  genai.record({"ns/again", "openai", "model-3", 1, 1});  // a model with labels of its own
  const std::string text = metrics.render();
  const int series = lines_starting(text, "gen_ai_client_token_usage_count{");
  // Each kept model, _OTHER under openai and under _OTHER; two token types each.
  EXPECT_EQ(series, static_cast<int>((kGenAiModelsMax + 2) * 2)) << text;
  EXPECT_NE(text.find(R"(gen_ai_provider_name="openai",gen_ai_request_model="_OTHER",)"
                      R"(gen_ai_token_type="input"} 11)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(gen_ai_provider_name="_OTHER",gen_ai_request_model="_OTHER",)"
                      R"(gen_ai_token_type="input"} 2)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(gen_ai_request_model="model-3",gen_ai_token_type="input"} 2)"),
            std::string::npos);
}

TEST(GenAiChargeMetrics, OptedInTheSuccessorCountersReplaceTheHistogram) {
  Metrics metrics;
  GenAiChargeMetrics genai(metrics, true);
  genai.record({"ns/bot-1", "openai", "gpt-4o-mini", 1200, 30});
  genai.record({"ns/bot-2", "openai", "gpt-4o-mini", 800, 70});
  genai.record({"ns/bot-2", "openai", "gpt-4o-mini", 800, 70});
  const std::string text = metrics.render();
  const std::string labels =
      R"({gen_ai_operation_name="chat",gen_ai_provider_name="openai",)"
      R"(gen_ai_request_model="gpt-4o-mini",gen_ai_token_modality="unknown"})";
  EXPECT_NE(text.find("# TYPE gen_ai_client_inference_usage_input_tokens_total counter"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gen_ai_client_inference_usage_input_tokens_total" + labels + " 2000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gen_ai_client_inference_usage_output_tokens_total" + labels + " 100\n"),
            std::string::npos);
  EXPECT_EQ(text.find("gen_ai_client_token_usage"), std::string::npos)
      << "gen_ai_latest_experimental emits the latest names and not the old ones";
}

}  // namespace
}  // namespace hb::controllers
