// Every name an Agent gives for the operator or its Pod to look up is
// checked against its kind's rule: a name that is not one is SpecValid=False
// naming the field, before anything is requested with it.
#include <gtest/gtest.h>

#include "controllers/model/agent_spec.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

const char* kSmuggling =
    "x HTTP/1.1\r\nHost: a\r\n\r\nDELETE /api/v1/namespaces/victim/configmaps/precious";

bool has_error_for(const SpecCheck& check, const std::string& field) {
  for (const std::string& error : check.errors) {
    if (error.rfind(field + " \"", 0) == 0) return true;
  }
  return false;
}

TEST(AgentSpecNames, ASmugglingPromptConfigMapNameIsInvalidNamingTheField) {
  Json a = testing::agent();
  a["spec"]["heartbeat"].erase("prompt");
  a["spec"]["heartbeat"]["promptFrom"] = {
      {"configMapKeyRef", {{"name", "prompts"}, {"key", "md"}}}};
  ASSERT_TRUE(parse_agent_spec(a).valid()) << parse_agent_spec(a).message();  // control
  a["spec"]["heartbeat"]["promptFrom"]["configMapKeyRef"]["name"] = kSmuggling;
  const SpecCheck check = parse_agent_spec(a);
  ASSERT_FALSE(check.valid());
  EXPECT_TRUE(has_error_for(check, "spec.heartbeat.promptFrom.configMapKeyRef.name"))
      << check.message();
  EXPECT_EQ(check.message().find_first_of("\r\n"), std::string::npos) << check.message();
  EXPECT_NE(check.message().find("DNS-1123 subdomain"), std::string::npos);
}

TEST(AgentSpecNames, EveryReferencedNameAndKeyFollowsItsRule) {
  struct Case {
    const char* field;
    const char* pointer;
    const char* bad;
  };
  const Case cases[] = {
      {"spec.model.apiKeySecretRef.name", "/spec/model/apiKeySecretRef/name", "../llm"},
      {"spec.model.apiKeySecretRef.key", "/spec/model/apiKeySecretRef/key", "a/b"},
      {"spec.memory.archival.persistentVolumeClaimName",
       "/spec/memory/archival/persistentVolumeClaimName", "Data"},
      {"spec.heartbeat.promptFrom.configMapKeyRef.key",
       "/spec/heartbeat/promptFrom/configMapKeyRef/key", ".."},
  };
  for (const Case& c : cases) {
    Json a = testing::agent();
    a["spec"]["heartbeat"].erase("prompt");
    a["spec"]["heartbeat"]["promptFrom"] = {{"configMapKeyRef", {{"name", "p"}, {"key", "md"}}}};
    a["spec"]["memory"]["archival"]["persistentVolumeClaimName"] = "data";
    ASSERT_TRUE(parse_agent_spec(a).valid()) << c.field << ": " << parse_agent_spec(a).message();
    a[Json::json_pointer(c.pointer)] = c.bad;
    const SpecCheck check = parse_agent_spec(a);
    EXPECT_TRUE(has_error_for(check, c.field)) << c.field << ": " << check.message();
  }
}

}  // namespace
}  // namespace hb::controllers
