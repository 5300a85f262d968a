// The CRD's maximums and the code's named bounds are one contract: an Agent
// the API server accepts is one the operator can compute with (no overflow,
// no cast past a bound), and a value the code refuses is refused at apply
// time too.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "controllers/agent_spec.h"

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
  EXPECT_EQ(maximum_of({"model", "maxTokens"}), static_cast<double>(kModelMaxTokensMax));
  EXPECT_EQ(agent_field({"model", "maxTokens"})["default"].as<int64_t>(), kModelMaxTokensDefault);
  EXPECT_EQ(maximum_of({"heartbeat", "idleBackoff", "after"}),
            static_cast<double>(kIdleBackoffAfterMax));
  EXPECT_EQ(agent_field({"heartbeat", "idleBackoff", "idleToken"})["maxLength"].as<std::size_t>(),
            kIdleTokenBytesMax);
  EXPECT_EQ(agent_field({"heartbeat", "mentionableBy"})["maxItems"].as<std::size_t>(),
            kMentionableByItemsMax);
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
