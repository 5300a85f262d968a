// Ownership before grants (controllers/model/agent_grants.h): which of an Agent's
// grants go when an object its Role names belongs to someone else.
#include "controllers/model/agent_grants.h"

#include <gtest/gtest.h>

#include "controllers/pod/job_builder.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

constexpr const char* kUid = "uid-bot";

Json owned(Json object, const std::string& uid, bool controller = true) {
  object["metadata"]["ownerReferences"] =
      Json::array({{{"kind", "Agent"}, {"name", "bot"}, {"uid", uid}, {"controller", controller}}});
  return object;
}

// The Role and RoleBinding build_agent_objects makes for testing::agent().
Json the_role() {
  return build_agent_objects(parse_agent_spec(testing::agent()).spec, JobConfig{})[3].second;
}
Json the_binding() {
  return build_agent_objects(parse_agent_spec(testing::agent()).spec, JobConfig{})[4].second;
}

TEST(AgentGrants, ObjectsThatGrantRightsAreTheServiceAccountRoleAndBinding) {
  EXPECT_TRUE(grants_rights("serviceaccounts"));
  EXPECT_TRUE(grants_rights("roles"));
  EXPECT_TRUE(grants_rights("rolebindings"));
  EXPECT_FALSE(grants_rights("configmaps"));
  EXPECT_FALSE(grants_rights("leases"));
}

TEST(AgentGrants, OnlyAControllerReferenceWithTheUidMakesAnObjectTheAgents) {
  const Json cm = {{"metadata", {{"name", "bot-memory"}}}};
  EXPECT_TRUE(controlled_by(owned(cm, kUid), kUid));
  EXPECT_FALSE(controlled_by(owned(cm, kUid, false), kUid)) << "anyone may add such a reference";
  EXPECT_FALSE(controlled_by(owned(cm, "uid-other"), kUid));
  EXPECT_FALSE(controlled_by(cm, kUid));
  EXPECT_FALSE(controlled_by(owned(cm, ""), ""));
  Json string_flag = owned(cm, kUid);
  string_flag["metadata"]["ownerReferences"][0]["controller"] = "true";
  EXPECT_FALSE(controlled_by(string_flag, kUid));
}

TEST(AgentGrants, TheRoleNamesItsLeaseAndMemoryOnly) {
  const Json role = the_role();
  EXPECT_TRUE(role_names(role, "configmaps", "bot-memory"));
  EXPECT_TRUE(role_names(role, "leases", "bot-heartbeat"));
  EXPECT_FALSE(role_names(role, "configmaps", "bot-heartbeat"));
  EXPECT_FALSE(role_names(role, "leases", "bot-memory"));
  EXPECT_FALSE(role_names(role, "configmaps", "other-memory"));
  EXPECT_FALSE(role_names(Json::object(), "configmaps", "bot-memory"));
}

// An older operator made the grants before it found bot-memory foreign:
// both go, binding first.
TEST(AgentGrants, TheAgentsGrantsNamingAForeignObjectAreRemoved) {
  const Json role = the_role(), binding = the_binding();
  for (const char* kind : {"configmaps", "leases"}) {
    const std::string name = std::string(kind) == "leases" ? "bot-heartbeat" : "bot-memory";
    const StaleGrants s = stale_grants(&role, &binding, kind, name, kUid);
    EXPECT_TRUE(s.delete_role) << kind;
    EXPECT_TRUE(s.delete_role_binding) << kind;
  }
}

TEST(AgentGrants, NothingTheAgentDoesNotControlIsRemoved) {
  const Json role = the_role(), binding = the_binding();
  const Json theirs_role = owned(role, "uid-other"), theirs_binding = owned(binding, "uid-other");
  StaleGrants s = stale_grants(&theirs_role, &theirs_binding, "configmaps", "bot-memory", kUid);
  EXPECT_FALSE(s.any()) << "someone else's Role and RoleBinding of those names";
  s = stale_grants(&theirs_role, &binding, "configmaps", "bot-memory", kUid);
  EXPECT_FALSE(s.any()) << "our binding to their Role: not a grant of ours naming the object";
  const Json loose_role = owned(role, kUid, false);
  s = stale_grants(&loose_role, nullptr, "configmaps", "bot-memory", kUid);
  EXPECT_FALSE(s.delete_role) << "a non-controller reference is not ownership";
}

TEST(AgentGrants, AGrantThatDoesNotNameTheObjectStays) {
  const Json role = the_role(), binding = the_binding();
  const StaleGrants s = stale_grants(&role, &binding, "configmaps", "someone-elses", kUid);
  EXPECT_FALSE(s.any());
}

// Part way: the binding went, the Role stayed (a crash); or the Role went.
TEST(AgentGrants, WhatIsLeftOfAHalfRemovedGrantGoesToo) {
  const Json role = the_role(), binding = the_binding();
  StaleGrants s = stale_grants(&role, nullptr, "leases", "bot-heartbeat", kUid);
  EXPECT_TRUE(s.delete_role);
  EXPECT_FALSE(s.delete_role_binding);
  s = stale_grants(nullptr, &binding, "leases", "bot-heartbeat", kUid);
  EXPECT_FALSE(s.delete_role);
  EXPECT_TRUE(s.delete_role_binding);
  EXPECT_FALSE(stale_grants(nullptr, nullptr, "leases", "bot-heartbeat", kUid).any());
}

}  // namespace
}  // namespace hb::controllers
