// The trace context the operator hands the runner, and the conventions'
// opt-in both read.
#include "api/trace_context.h"

#include <gtest/gtest.h>

namespace hb::api {
namespace {

TEST(RunTraceParent, TheTraceIdIsTheRunsUidAndTheParentIsStable) {
  const auto parent = run_trace_parent("7C9E6679-7425-40de-944b-e07fc1f90ae7");
  ASSERT_TRUE(parent.has_value());
  EXPECT_EQ(parent->trace_id, "7c9e6679742540de944be07fc1f90ae7");
  ASSERT_EQ(parent->parent_span_id.size(), kSpanIdHexDigits);
  EXPECT_EQ(run_trace_parent("7c9e6679-7425-40de-944b-e07fc1f90ae7")->parent_span_id,
            parent->parent_span_id)
      << "the same run gets the same parent however often its Job is built";
  EXPECT_NE(run_trace_parent("7c9e6679-7425-40de-944b-e07fc1f90ae8")->parent_span_id,
            parent->parent_span_id);
  // What the operator sets is what the runner reads back.
  const std::string text = format_traceparent(parent->trace_id, parent->parent_span_id);
  const auto read = parse_traceparent(text);
  ASSERT_TRUE(read.has_value()) << text;
  EXPECT_EQ(read->trace_id, parent->trace_id);
  EXPECT_EQ(read->parent_span_id, parent->parent_span_id);
}

TEST(RunTraceParent, NoneForAUidThatIsNotAUuid) {
  EXPECT_FALSE(run_trace_parent("").has_value());
  EXPECT_FALSE(run_trace_parent("uid-1").has_value());
  EXPECT_FALSE(run_trace_parent("00000000-0000-0000-0000-000000000000").has_value());
  EXPECT_FALSE(run_trace_parent("7c9e6679-7425-40de-944b-e07fc1f90ae7-00").has_value());
  EXPECT_FALSE(run_trace_parent("zc9e6679-7425-40de-944b-e07fc1f90ae7").has_value());
}

TEST(SemconvOptIn, NamesTheGenAiValueAmongOthers) {
  EXPECT_TRUE(gen_ai_latest_experimental("gen_ai_latest_experimental"));
  EXPECT_TRUE(gen_ai_latest_experimental("http, gen_ai_latest_experimental ,database"));
  EXPECT_FALSE(gen_ai_latest_experimental(""));
  EXPECT_FALSE(gen_ai_latest_experimental("http/dup"));
  EXPECT_FALSE(gen_ai_latest_experimental("gen_ai_latest_experimental_x"));
  EXPECT_FALSE(gen_ai_latest_experimental("gen_ai"));
}

}  // namespace
}  // namespace hb::api
