// Prompt-cache prices (issue 58 item 11): cache reads and writes the runner
// reports are charged at their own prices, the rest of the input at the input
// price; a cache price nobody sets is the input price; a policy's cache price
// is a floor like its others. The runner's counts are hostile: whatever a
// forged result or Lease report says, a run is never charged less than its
// input at the input price unless its cache counts fit within its input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "api/usage_report.h"
#include "controllers/model/run_cost.h"
#include "controllers/run/run_record.h"
#include "controllers/run/run_status.h"
#include "controllers/spend/pricing.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using testing::at;
using ::testing::HasSubstr;

// Cents per million tokens, a cache read cheaper and a cache write dearer
// than uncached input, as Anthropic bills them.
constexpr double kInputCents = 300;
constexpr double kOutputCents = 1500;
constexpr double kCachedCents = 30;
constexpr double kCacheWriteCents = 375;
constexpr double kTokensPerMillion = 1e6;
const Pricing kCachePricing{kInputCents, kOutputCents, kCachedCents, kCacheWriteCents};

UsageCounts usage(int64_t input, int64_t output, int64_t read, int64_t write) {
  UsageCounts u;
  u.llm_calls = 1;
  u.iterations = 1;
  u.input_tokens = input;
  u.output_tokens = output;
  u.cache_read_input_tokens = read;
  u.cache_write_input_tokens = write;
  return u;
}

// Every input token at the input price.
double uncached_cents(int64_t input, int64_t output) {
  return (static_cast<double>(input) * kInputCents + static_cast<double>(output) * kOutputCents) /
         kTokensPerMillion;
}

ChargeInput charge_input(std::optional<UsageCounts> result, std::optional<UsageCounts> beat) {
  ChargeInput in;
  in.result = result;
  in.beat = beat;
  in.pricing = kCachePricing;
  in.bounds = usage_bounds(AgentSpec{});
  return in;
}

TEST(CachePricing, ReadsAndWritesAreChargedTheirPricesAndTheRestTheInputPrice) {
  const Charge c = charge_run(charge_input(usage(1000, 100, 600, 200), std::nullopt));
  // 200 uncached x 300 + 600 read x 30 + 200 written x 375 + 100 out x 1500.
  EXPECT_DOUBLE_EQ(c.cost_cents, (60000.0 + 18000 + 75000 + 150000) / kTokensPerMillion);
  EXPECT_EQ(c.usage.cache_read_input_tokens, 600);
  EXPECT_EQ(c.usage.cache_write_input_tokens, 200);
  // No cache counts: all input at the input price.
  EXPECT_DOUBLE_EQ(charge_run(charge_input(usage(1000, 100, 0, 0), std::nullopt)).cost_cents,
                   uncached_cents(1000, 100));
}

TEST(CachePricing, NoCachePriceSetChargesCacheCountsAtTheInputPrice) {
  const Pricing plain{kInputCents, kOutputCents};
  EXPECT_DOUBLE_EQ(cost_cents(usage(1000, 100, 600, 200), plain), uncached_cents(1000, 100));
  EXPECT_DOUBLE_EQ(cached_input_price(plain), kInputCents);
  EXPECT_DOUBLE_EQ(cache_write_input_price(plain), kInputCents);
}

// What a runner (or the agent forging its own result or Lease report) can
// send about the cache: each is charged at least input x the input price.
TEST(CachePricing, ForgedCacheCountsNeverChargeLessThanInputAtTheInputPrice) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Forgery {
    const char* what;
    std::optional<UsageCounts> result, beat;
  };
  const Forgery forgeries[] = {
      {"more reads than input", usage(1000, 100, 1001, 0), std::nullopt},
      {"all of int64 read", usage(1000, 100, kMax, 0), std::nullopt},
      {"reads and writes past input together", usage(1000, 100, 600, 401), std::nullopt},
      {"both at int64 max", usage(1000, 100, kMax, kMax), std::nullopt},
      {"a negative write to offset the reads", usage(1000, 100, 1500, -500), std::nullopt},
      {"a negative read", usage(1000, 100, -1000, 0), std::nullopt},
      {"the result reads all, the Lease writes all", usage(1000, 100, 1000, 0),
       usage(1000, 100, 0, 1000)},
      {"a Lease of reads alone, no result", std::nullopt, usage(1000, 100, 5000, 0)},
      {"a small input with the reads of a larger one", usage(10, 100, 0, 0), usage(0, 0, 1000, 0)},
  };
  for (const Forgery& f : forgeries) {
    const Charge c = charge_run(charge_input(f.result, f.beat));
    EXPECT_GE(c.cost_cents, uncached_cents(c.usage.input_tokens, c.usage.output_tokens)) << f.what;
    EXPECT_EQ(c.usage.cache_read_input_tokens, 0) << f.what;
    EXPECT_EQ(c.usage.cache_write_input_tokens, 0) << f.what;
  }
}

// A report past the run's bound is charged the bound, all at the input price.
TEST(CachePricing, UsageOutOfBoundsIsChargedTheBoundAtTheInputPrice) {
  const UsageBounds bounds = usage_bounds(AgentSpec{});
  const int64_t past = bounds.input_tokens + 1;
  const Charge c = charge_run(charge_input(usage(past, 0, past, 0), std::nullopt));
  EXPECT_FALSE(c.out_of_bounds.empty());
  EXPECT_EQ(c.usage.input_tokens, bounds.input_tokens);
  EXPECT_EQ(c.usage.cache_read_input_tokens, 0);
  EXPECT_DOUBLE_EQ(c.cost_cents, uncached_cents(bounds.input_tokens, 0));
  ChargeInput malformed = charge_input(usage(1000, 0, 1000, 0), std::nullopt);
  malformed.result_usage_problem = "usage.outputTokens is negative";
  const Charge m = charge_run(malformed);
  EXPECT_EQ(m.usage.cache_read_input_tokens, 0);
  EXPECT_DOUBLE_EQ(m.cost_cents, uncached_cents(bounds.input_tokens, bounds.output_tokens));
}

// Cumulative reports: the higher of the result and the Lease, field by field.
TEST(CachePricing, TheLeaseReportsCacheCountsAndALoweredOneIsNoticed) {
  const UsageCounts high = usage(1000, 100, 600, 0);
  const UsageCounts lowered = usage(1000, 100, 300, 0);
  EXPECT_EQ(usage_field_max(high, lowered), high);
  EXPECT_TRUE(usage_below_in_some_field(lowered, high));
}

// api/usage_report.h: the cache counts ride the Lease report; a report
// without them decodes, and a bad cache count never drops the report (that would
// lower the charge of a killed runner).
TEST(CacheUsageReport, RoundTripsAndAReportWithoutThemDecodes) {
  api::UsageReport r{{2, 1500, 300, 1, 2, 900, 100}, "agent-1"};
  api::DecodedUsageReport d = api::decode_usage_report(api::encode_usage_report(r));
  ASSERT_TRUE(d.report) << d.problem;
  EXPECT_EQ(*d.report, r);
  const std::string without_cache =
      R"({"inputTokens":1500,"iterations":2,"llmCalls":2,"outputTokens":300,"run":"agent-1","toolCalls":1})";
  d = api::decode_usage_report(without_cache);
  ASSERT_TRUE(d.report) << d.problem;
  EXPECT_EQ(d.report->input_tokens, 1500);
  EXPECT_EQ(d.report->cache_read_input_tokens, 0);
  EXPECT_EQ(api::encode_usage_report({{2, 1500, 300, 1, 2}, "agent-1"}), without_cache)
      << "a report without cache counts is written without their keys";
}

TEST(CacheUsageReport, BadCacheCountsAreDroppedAndTheReportKept) {
  for (
      const char* cache :
      {R"("cacheReadInputTokens":1501)", R"("cacheReadInputTokens":-1)",
       R"("cacheReadInputTokens":1.5)", R"("cacheReadInputTokens":"900")",
       R"("cacheReadInputTokens":18446744073709551615)",
       R"("cacheReadInputTokens":1000,"cacheWriteInputTokens":501)",
       R"("cacheReadInputTokens":9223372036854775807,"cacheWriteInputTokens":9223372036854775807)"}) {
    const std::string text =
        std::string(R"({"run":"r","llmCalls":1,"inputTokens":1500,"outputTokens":3,)") + cache +
        "}";
    const api::DecodedUsageReport d = api::decode_usage_report(text);
    ASSERT_TRUE(d.report) << text << ": " << d.problem;
    EXPECT_EQ(d.report->input_tokens, 1500) << text;
    EXPECT_EQ(d.report->cache_read_input_tokens, 0) << text;
    EXPECT_EQ(d.report->cache_write_input_tokens, 0) << text;
  }
}

AgentSpec openai_agent(Pricing pricing) {
  AgentSpec a;
  a.provider = "openai";
  a.model = "gpt-4o-mini";
  a.pricing = pricing;
  return a;
}

PolicySpec team_policy(Json price) {
  price["provider"] = "openai";
  price["model"] = "*";
  PolicySpec p = parse_policy({{"metadata", {{"namespace", "ns"}, {"name", "team"}}},
                               {"spec", {{"pricing", Json::array({price})}}}});
  EXPECT_TRUE(p.valid()) << join_errors(p.errors);
  return p;
}

TEST(CachePricing, TheAgentsCachePricesAreReadFromItsSpec) {
  Json a = agent();
  a["spec"]["model"]["pricing"] = {{"inputCentsPerMillionTokens", kInputCents},
                                   {"cachedInputCentsPerMillionTokens", kCachedCents},
                                   {"cacheWriteInputCentsPerMillionTokens", kCacheWriteCents}};
  const SpecCheck check = parse_agent_spec(a);
  EXPECT_EQ(check.spec.pricing.cached_input_cents_per_million_tokens, kCachedCents);
  EXPECT_EQ(check.spec.pricing.cache_write_input_cents_per_million_tokens, kCacheWriteCents);
  EXPECT_FALSE(parse_agent_spec(agent()).spec.pricing.cached_input_cents_per_million_tokens);
}

TEST(CachePricing, APolicysCachePricesChargeAnUnpricedAgent) {
  const PolicySpec team = team_policy({{"inputCentsPerMillionTokens", kInputCents},
                                       {"outputCentsPerMillionTokens", kOutputCents},
                                       {"cachedInputCentsPerMillionTokens", kCachedCents},
                                       {"cacheWriteInputCentsPerMillionTokens", kCacheWriteCents}});
  const EffectivePricing e = effective_pricing(openai_agent({}), {team});
  EXPECT_EQ(e.pricing.cached_input_cents_per_million_tokens, kCachedCents);
  EXPECT_EQ(e.pricing.cache_write_input_cents_per_million_tokens, kCacheWriteCents);
  EXPECT_EQ(e.source, kPricingSourcePolicy);
  EXPECT_EQ(e.policy, "ns/team");
}

// The policy's price is a floor: an author's cheap cache price cannot lower
// a policy's input price (a policy without a cache price charges all input
// at its input price), nor its cache price.
TEST(CachePricing, AnAgentsCachePriceNeverLowersAPolicysFloor) {
  const Pricing cheap{kInputCents, kOutputCents, 1, 1};
  EffectivePricing e =
      effective_pricing(openai_agent(cheap), {team_policy({{"inputCentsPerMillionTokens", 200}})});
  EXPECT_EQ(e.pricing.input_cents_per_million_tokens, kInputCents);  // the agent's, higher
  EXPECT_EQ(e.pricing.cached_input_cents_per_million_tokens, 200);   // the policy's input price
  EXPECT_EQ(e.pricing.cache_write_input_cents_per_million_tokens, 200);
  EXPECT_EQ(e.source, kPricingSourceBoth);
  e = effective_pricing(openai_agent(cheap),
                        {team_policy({{"inputCentsPerMillionTokens", 200},
                                      {"cachedInputCentsPerMillionTokens", kCachedCents}})});
  EXPECT_EQ(e.pricing.cached_input_cents_per_million_tokens, kCachedCents);
  // An agent dearer than the policy keeps its price; unset on both: the input price.
  e = effective_pricing(openai_agent({kInputCents, kOutputCents}),
                        {team_policy({{"inputCentsPerMillionTokens", 100},
                                      {"outputCentsPerMillionTokens", 100},
                                      {"cachedInputCentsPerMillionTokens", kCachedCents}})});
  EXPECT_EQ(e.pricing.cached_input_cents_per_million_tokens, kInputCents);
  EXPECT_EQ(e.pricing.cache_write_input_cents_per_million_tokens, kInputCents);
  EXPECT_EQ(e.source, kPricingSourceAgent);
  e = effective_pricing(openai_agent({kInputCents, kOutputCents}), {});
  EXPECT_EQ(e.pricing.cached_input_cents_per_million_tokens, kInputCents);
}

TEST(CachePricing, ABadCachePriceMakesThePolicyInvalidNamingTheField) {
  for (const Json& bad : {Json(-1), Json("30"), Json(1e9)}) {
    const PolicySpec p = parse_policy(
        {{"metadata", {{"namespace", "ns"}, {"name", "team"}}},
         {"spec",
          {{"pricing", Json::array({{{"provider", "openai"},
                                     {"model", "*"},
                                     {"cacheWriteInputCentsPerMillionTokens", bad}}})}}}});
    EXPECT_FALSE(p.valid()) << bad;
    EXPECT_THAT(join_errors(p.errors),
                HasSubstr("spec.pricing[0].cacheWriteInputCentsPerMillionTokens"));
  }
}

TEST(CachePricing, TheChargeRecordNamesEveryPriceCharged) {
  const Json record = charge_record("anthropic", "claude", kCachePricing, "agent", "");
  EXPECT_EQ(record["cachedInputCentsPerMillionTokens"], kCachedCents);
  EXPECT_EQ(record["cacheWriteInputCentsPerMillionTokens"], kCacheWriteCents);
  const Json plain = charge_record("anthropic", "claude", {kInputCents, kOutputCents}, "agent", "");
  EXPECT_EQ(plain["cachedInputCentsPerMillionTokens"], kInputCents);
  EXPECT_EQ(plain["cacheWriteInputCentsPerMillionTokens"], kInputCents);
}

// The run as the operator observes it: the result from the runner's
// termination message, or (killed) the report on the agent's Lease.
const TimePoint kStart = at("2024-05-01T12:05:00Z");

Json running_run() {
  return with_status(run("r1"),
                     {{"phase", "Running"}, {"jobName", "r1"}, {"startedAt", fmt(kStart)}});
}

RunObservation observe_cached(const Json& r, const Json& j, std::vector<const Json*> pods,
                              const Json* lease) {
  RunObservationInput in;
  in.run = &r;
  in.job = &j;
  in.pods = std::move(pods);
  in.lease = lease;
  in.now = at("2024-05-01T12:06:10Z");
  in.timeouts = {std::chrono::seconds(300), std::chrono::seconds(30), std::chrono::seconds(120)};
  in.pricing = kCachePricing;
  in.bounds = usage_bounds(AgentSpec{});
  in.provider = "anthropic";
  in.model = "claude";
  return observe_run(in);
}

std::string cached_result(int64_t input, int64_t read, int64_t write) {
  Json doc = Json::parse(result_json(0, input, 100));
  doc["usage"]["cacheReadInputTokens"] = read;
  doc["usage"]["cacheWriteInputTokens"] = write;
  return doc.dump();
}

TEST(CacheRunCharge, TheRunIsChargedItsReportedCacheCountsAndRecordsThem) {
  const Json r = running_run();
  const Json j = job("r1");
  const Json p = terminated(pod("r1-abc"), 0, cached_result(1000, 600, 200));
  const RunObservation o = observe_cached(r, j, {&p}, nullptr);
  ASSERT_TRUE(o.became_final);
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 0.303);
  EXPECT_EQ(o.status["usage"]["cacheReadInputTokens"], 600);
  EXPECT_EQ(o.status["usage"]["cacheWriteInputTokens"], 200);
  EXPECT_EQ(o.status["charge"]["cachedInputCentsPerMillionTokens"], kCachedCents);
  EXPECT_EQ(o.status["charge"]["cacheWriteInputCentsPerMillionTokens"], kCacheWriteCents);
}

TEST(CacheRunCharge, AForgedResultWithMoreCacheThanInputIsChargedAllAtTheInputPrice) {
  const Json r = running_run();
  const Json j = job("r1");
  for (const auto& [read, write] : {std::pair<int64_t, int64_t>{1001, 0},
                                    {0, 1001},
                                    {600, 401},
                                    {std::numeric_limits<int64_t>::max(), 0}}) {
    const Json p = terminated(pod("r1-abc"), 0, cached_result(1000, read, write));
    const RunObservation o = observe_cached(r, j, {&p}, nullptr);
    EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], uncached_cents(1000, 100)) << read;
    EXPECT_FALSE(o.status["usage"].contains("cacheReadInputTokens")) << read;
  }
}

Json lease_report(const api::UsageReport& report) {
  Json lease = {{"spec", {{"renewTime", "2024-05-01T12:05:30Z"}}}};
  lease["metadata"]["annotations"][api::kAnnotationUsage] = api::encode_usage_report(report);
  return lease;
}

// A runner killed before its result: charged from its Lease report, cache
// counts included; a forged report is charged as above.
TEST(CacheRunCharge, AKilledRunnerIsChargedItsLeasesCacheCounts) {
  const Json r = running_run();
  const Json j = job("r1");
  const Json p = terminated(pod("r1-abc"), 137, "", "2024-05-01T12:06:00Z", "OOMKilled");
  Json lease = lease_report({{1, 1000, 100, 0, 1, 600, 200}, "r1"});
  RunObservation o = observe_cached(r, j, {&p}, &lease);
  ASSERT_TRUE(o.became_final);
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 0.303);
  EXPECT_EQ(o.status["usage"]["cacheReadInputTokens"], 600);
  lease = lease_report({{1, 1000, 100, 0, 1, 5000, 0}, "r1"});
  o = observe_cached(r, j, {&p}, &lease);
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], uncached_cents(1000, 100));
}

}  // namespace
}  // namespace hb::controllers
