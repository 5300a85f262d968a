// The namespaces the operator never manages (controllers/model/managed_namespaces.h):
// named in --namespace they stop the start with an error naming the flag;
// in all-namespaces mode their Agents are not reconciled (the reconciler's
// own test: tests/unit/controllers/reconciler_grants_test.cpp).
#include <gtest/gtest.h>

#include "controllers/model/managed_namespaces.h"
#include "operator/config.h"

namespace hb::operator_ {
namespace {

ConfigResult parse_with(const std::vector<std::string>& args, const std::string& pod_namespace) {
  return parse_config(args, [&](const std::string& name) -> std::optional<std::string> {
    if (name == "POD_NAMESPACE" && !pod_namespace.empty()) return pod_namespace;
    return std::nullopt;
  });
}

TEST(NamespaceRefusal, TheSystemNamespacesAreRefusedAtStart) {
  for (const char* ns : {"kube-system", "kube-public", "kube-node-lease"}) {
    const ConfigResult r = parse_with({std::string("--namespace=team-a,") + ns}, "");
    ASSERT_FALSE(r.config) << ns;
    EXPECT_NE(r.error.find(std::string("--namespace \"") + ns + "\""), std::string::npos)
        << r.error;
    EXPECT_NE(r.error.find("belongs to Kubernetes"), std::string::npos) << r.error;
  }
}

TEST(NamespaceRefusal, TheOperatorsOwnNamespaceIsRefusedAtStart) {
  const ConfigResult r = parse_with({"--namespace=team-a,heartbeat-system"}, "heartbeat-system");
  ASSERT_FALSE(r.config);
  EXPECT_NE(r.error.find("--namespace \"heartbeat-system\""), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("the operator's own"), std::string::npos) << r.error;
}

// The controls: other namespaces, and all namespaces, start.
TEST(NamespaceRefusal, OtherNamespacesAndAllNamespacesStart) {
  ConfigResult r = parse_with({"--namespace=team-a,team-b"}, "heartbeat-system");
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->own_namespace, "heartbeat-system");
  r = parse_with({}, "heartbeat-system");
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_TRUE(r.config->watch_namespaces.empty());
  // Out of a cluster without POD_NAMESPACE, no namespace is the operator's.
  r = parse_with({"--namespace=default"}, "");
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->own_namespace, "");
}

TEST(NamespaceRefusal, TheRefusalNamesTheNamespace) {
  using controllers::namespace_refusal;
  EXPECT_EQ(namespace_refusal("team-a", "heartbeat-system"), "");
  EXPECT_EQ(namespace_refusal("team-a", ""), "");
  EXPECT_NE(namespace_refusal("kube-system", "").find("kube-system"), std::string::npos);
  EXPECT_NE(namespace_refusal("ops", "ops").find("namespace ops is the operator's own"),
            std::string::npos);
  EXPECT_EQ(namespace_refusal("kube-systems", ""), "") << "a prefix is not the namespace";
}

}  // namespace
}  // namespace hb::operator_
