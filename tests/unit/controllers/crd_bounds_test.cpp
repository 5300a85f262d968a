// The CRD's maximums and the code's named bounds are one contract: an Agent
// the API server accepts is one the operator can compute with (no overflow,
// no cast past a bound), and a value the code refuses is refused at apply
// time too.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "api/call_durations.h"
#include "api/object_names.h"
#include "controllers/model/agent_spec.h"
#include "controllers/model/agent_status.h"
#include "controllers/run/run_record.h"

namespace hb::controllers {
namespace {

// properties.spec.properties.<path...> of the Agent CRD's first version.
YAML::Node agent_field(std::initializer_list<const char*> path) {
  YAML::Node crd = YAML::LoadFile(std::string(HB_SOURCE_DIR) + "/crds/heartbeat.dev_agents.yaml");
  YAML::Node node = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
  for (const char* name : path) node = node["properties"][name];
  return node;
}

double maximum_of(std::initializer_list<const char*> path) {
  YAML::Node field = agent_field(path);
  EXPECT_TRUE(field["maximum"]) << "no maximum for " << *(path.end() - 1);
  return field["maximum"] ? field["maximum"].as<double>() : -1;
}

TEST(CrdBounds, TheSchemaAndTheCodeAgree) {
  EXPECT_EQ(maximum_of({"heartbeat", "startingDeadlineSeconds"}),
            static_cast<double>(kStartingDeadlineSecondsMax));
  EXPECT_EQ(maximum_of({"model", "pricing", "inputCentsPerMillionTokens"}),
            kPriceCentsPerMillionTokensMax);
  EXPECT_EQ(maximum_of({"model", "pricing", "outputCentsPerMillionTokens"}),
            kPriceCentsPerMillionTokensMax);
  EXPECT_EQ(maximum_of({"model", "pricing", "cachedInputCentsPerMillionTokens"}),
            kPriceCentsPerMillionTokensMax);
  EXPECT_EQ(maximum_of({"model", "pricing", "cacheWriteInputCentsPerMillionTokens"}),
            kPriceCentsPerMillionTokensMax);
  EXPECT_EQ(maximum_of({"model", "maxTokens"}), static_cast<double>(kModelMaxTokensMax));
  EXPECT_EQ(maximum_of({"heartbeat", "contextRuns"}), static_cast<double>(kContextRunsMax));
  EXPECT_EQ(agent_field({"heartbeat", "contextRuns"})["default"].as<int>(), kContextRunsDefault);
  EXPECT_EQ(agent_field({"model", "maxTokens"})["default"].as<int64_t>(), kModelMaxTokensDefault);
  EXPECT_EQ(maximum_of({"heartbeat", "idleBackoff", "after"}),
            static_cast<double>(kIdleBackoffAfterMax));
  EXPECT_EQ(agent_field({"heartbeat", "idleBackoff", "idleToken"})["maxLength"].as<std::size_t>(),
            kIdleTokenBytesMax);
  EXPECT_EQ(agent_field({"heartbeat", "mentionableBy"})["maxItems"].as<std::size_t>(),
            kMentionableByItemsMax);
  EXPECT_EQ(agent_field({"memory", "blocks"})["items"]["properties"]["limit"]["default"].as<int>(),
            api::kCoreMemoryBlockLimitDefault);
}

// The API server prunes status fields its schema does not list, without an
// error: a field the operator writes and the CRD lacks is silently lost.
// Every field of a full status is listed.
TEST(CrdBounds, EveryAgentStatusFieldTheOperatorWritesIsInTheSchema) {
  AgentStatus full;
  full.observed_generation = 1;
  full.conditions = std::make_shared<const std::vector<Condition>>(std::vector<Condition>{{}});
  full.phase = "Idle";
  const TimePoint t = TimePoint{} + std::chrono::hours(24 * 365 * 55);
  full.last_schedule_time = full.last_heartbeat_time = full.next_heartbeat_time = t;
  full.paused_until = t;
  full.active_run = "r";
  full.spend = Spend{"2024-05", 1, 2, 3};
  full.capabilities = api::AgentType::kMemgpt;
  full.recent_runs = std::make_shared<const std::vector<LedgerEntry>>(
      std::vector<LedgerEntry>{{"r", "Succeeded", 0, 1, t}});
  full.last_invoke = LastInvoke{"v", "h", "r"};
  full.last_skipped = SkippedHeartbeat{t, "PromptEmpty", "m"};
  full.budget_hold = BudgetHold{"2024-05", 1, t, "h", t, "BudgetRaised"};
  full.idle_streak = 1;
  full.provider_error_streak = 1;
  full.effective_interval = "1m";
  YAML::Node crd = YAML::LoadFile(std::string(HB_SOURCE_DIR) + "/crds/heartbeat.dev_agents.yaml");
  const YAML::Node status =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
  const Json rendered = to_json(full);  // held: items() of a temporary would dangle
  for (const auto& [key, value] : rendered.items()) {
    const YAML::Node field = status["properties"][key];
    ASSERT_TRUE(field) << "status." << key << " is written but not in the CRD: it would be pruned";
    if (!value.is_object() || !field["properties"]) continue;
    for (const auto& [inner, unused] : value.items()) {
      EXPECT_TRUE(field["properties"][inner]) << "status." << key << "." << inner;
    }
  }
}

// The run's charge and its cache counts, as the operator writes them, are
// listed in the HeartbeatRun schema (else pruned without an error).
TEST(CrdBounds, EveryRunChargeAndCacheFieldIsInTheSchema) {
  YAML::Node crd =
      YAML::LoadFile(std::string(HB_SOURCE_DIR) + "/crds/heartbeat.dev_heartbeatruns.yaml");
  const YAML::Node status =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
  const Json charge = charge_record("openai", "m", {1, 2, 3, 4}, "policy", "ns/team");
  for (const auto& [key, unused] : charge.items()) {
    EXPECT_TRUE(status["properties"]["charge"]["properties"][key]) << "status.charge." << key;
  }
  UsageCounts cached;
  cached.cache_read_input_tokens = 1;
  cached.cache_write_input_tokens = 1;
  Json counts = Json::object();
  put_cache_counts(counts, cached);
  ASSERT_EQ(counts.size(), 2u);
  for (const char* parent : {"usage", "reportedUsage"}) {
    for (const auto& [key, unused] : counts.items()) {
      EXPECT_TRUE(status["properties"][parent]["properties"][key])
          << "status." << parent << "." << key;
    }
  }
}

// The call summary the operator keeps on a run, failed calls included, is
// in the HeartbeatRun schema: pruned, a later pass would read no failures.
TEST(CrdBounds, EveryCallDurationsFieldIsInTheSchema) {
  YAML::Node crd =
      YAML::LoadFile(std::string(HB_SOURCE_DIR) + "/crds/heartbeat.dev_heartbeatruns.yaml");
  const YAML::Node field = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
                              ["status"]["properties"]["usage"]["properties"]["modelCallDurations"];
  ASSERT_TRUE(field);
  api::CallDurations durations;
  api::add_call(durations, 1.0);
  for (std::size_t i = 0; i < api::kCallErrorTypeCount; ++i) {
    api::add_failed_call(durations, static_cast<api::CallErrorType>(i), 2.0);
  }
  const Json rendered = api::call_durations_to_json(durations);
  ASSERT_EQ(rendered["failed"].size(), api::kCallErrorTypeCount);
  for (const auto& [key, unused] : rendered.items()) {
    EXPECT_TRUE(field["properties"][key]) << "modelCallDurations." << key;
  }
  const YAML::Node failed = field["properties"]["failed"];
  EXPECT_EQ(failed["maxProperties"].as<std::size_t>(), api::kCallErrorTypeCount);
  for (const auto& [key, unused] : rendered["failed"]["timeout"].items()) {
    EXPECT_TRUE(failed["additionalProperties"]["properties"][key]) << "failed.*." << key;
  }
}

// The names the operator checks (api/object_names.h) carry the same rule
// in the schema, so the API server refuses them at apply naming the field.
TEST(CrdBounds, EveryReferencedNameHasItsKindsPattern) {
  const std::string subdomain(api::kDns1123SubdomainPattern), key(api::kConfigKeyPattern);
  auto pattern = [](std::initializer_list<const char*> path) {
    const YAML::Node field = agent_field(path);
    return field["pattern"] ? field["pattern"].as<std::string>() : std::string("(none)");
  };
  EXPECT_EQ(pattern({"model", "apiKeySecretRef", "name"}), subdomain);
  EXPECT_EQ(pattern({"model", "apiKeySecretRef", "key"}), key);
  EXPECT_EQ(pattern({"heartbeat", "promptFrom", "configMapKeyRef", "name"}), subdomain);
  EXPECT_EQ(pattern({"heartbeat", "promptFrom", "configMapKeyRef", "key"}), key);
  EXPECT_EQ(pattern({"memory", "archival", "persistentVolumeClaimName"}), subdomain);
  EXPECT_EQ(agent_field({"heartbeat", "mentionableBy"})["items"]["pattern"].as<std::string>(),
            subdomain);
  EXPECT_EQ(agent_field({"runtime", "imagePullSecrets"})["items"]["properties"]["name"]["pattern"]
                .as<std::string>(),
            subdomain);
  YAML::Node runs =
      YAML::LoadFile(std::string(HB_SOURCE_DIR) + "/crds/heartbeat.dev_heartbeatruns.yaml");
  EXPECT_EQ(runs["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                ["properties"]["agentRef"]["properties"]["name"]["pattern"]
                    .as<std::string>(),
            subdomain);
}

// What the schema does not stop, the code refuses by name.
TEST(CrdBounds, AStartingDeadlinePastTheBoundIsAnInvalidSpec) {
  Json agent = {
      {"metadata", {{"name", "a"}}},
      {"spec",
       {{"model", {{"provider", "openai"}, {"model", "m"}}},
        {"heartbeat", {{"prompt", "p"}, {"interval", "1m"}, {"startingDeadlineSeconds", 1e300}}}}}};
  SpecCheck check = parse_agent_spec(agent);
  EXPECT_NE(check.message().find("spec.heartbeat.startingDeadlineSeconds"), std::string::npos)
      << check.message();
  EXPECT_FALSE(check.spec.starting_deadline_seconds);
}

}  // namespace
}  // namespace hb::controllers
