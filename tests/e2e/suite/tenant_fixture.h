// The tenant as the attacker (../shared: "Tenancy"): a real identity, a
// ServiceAccount of the test's namespace bound to the built-in `edit` role
// (which the chart's agents-editor role aggregates into), against the real
// API server with RBAC, while the operator acts as the chart's ServiceAccount.
#pragma once

#include "kube/kubeconfig.h"
#include "tests/e2e/suite/e2e_fixture.h"

namespace hb::testing {

// The Agent's SpecValid condition (an empty object until written).
inline json spec_valid_of(const json& agent) {
  const json* conditions = controllers::find_path(agent, "status/conditions");
  if (conditions != nullptr && conditions->is_array()) {
    for (const json& c : *conditions) {
      if (c.value("type", "") == "SpecValid") return c;
    }
  }
  return json::object();
}

class TenantTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    tenant_ = client_for_service_account("tenant", "edit");
  }
  void TearDown() override {
    for (const std::string& ns : other_namespaces_) {
      if (env("HB_KEEP_NAMESPACES").empty()) (void)client_->remove(res::kNamespaces, "", ns);
    }
    E2eTest::TearDown();
  }

  // A ServiceAccount of ns_ bound to `cluster_role` there, and a client
  // that authenticates with its token only (no client certificate).
  std::shared_ptr<kube::Client> client_for_service_account(const std::string& name,
                                                           const std::string& cluster_role) {
    client_
        ->create(res::kServiceAccounts, ns_,
                 {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", name}}}})
        .or_throw();
    client_
        ->create(res::kRoleBindings, ns_,
                 {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                  {"kind", "RoleBinding"},
                  {"metadata", {{"name", name + "-" + cluster_role}}},
                  {"roleRef",
                   {{"apiGroup", "rbac.authorization.k8s.io"},
                    {"kind", "ClusterRole"},
                    {"name", cluster_role}}},
                  {"subjects", {{{"kind", "ServiceAccount"}, {"name", name}, {"namespace", ns_}}}}})
        .or_throw();
    auto client = client_as(name);
    // The aggregation controller fills `edit` shortly after the chart's role
    // exists: wait until the identity may list Agents here.
    EXPECT_TRUE(wait_until([&] { return client->list(res::kAgents, ns_, {}).ok(); }, 30s))
        << "ServiceAccount " << name << " cannot list Agents through ClusterRole " << cluster_role;
    return client;
  }

  // A client that authenticates as ServiceAccount `name` of ns_ with its
  // token only (no client certificate): what a Pod running as it holds.
  std::shared_ptr<kube::Client> client_as(const std::string& name) {
    std::string token;
    EXPECT_TRUE(wait_until([&] { return !(token = token_of(name)).empty(); }, 30s))
        << "no token Secret for ServiceAccount " << ns_ << "/" << name;
    kube::ClusterConfig config = kube::load_default().or_throw();
    config.tls.client_cert_pem.clear();
    config.tls.client_key_pem.clear();
    config.username.clear();
    config.password.clear();
    config.token_file.clear();
    config.token = token;
    kube::ClientOptions options;
    options.qps = 0;
    return std::make_shared<kube::Client>(config, options);
  }

  std::string token_of(const std::string& service_account) {
    const json sa = client_->get(res::kServiceAccounts, ns_, service_account).or_throw();
    const json* secrets = controllers::find_path(sa, "secrets");
    if (secrets == nullptr || secrets->empty()) return "";
    const json secret =
        client_->get(res::kSecrets, ns_, (*secrets)[0]["name"].get<std::string>()).or_throw();
    const std::string encoded = string_at(secret, "data/token");
    return encoded.empty() ? "" : sh("printf %s '" + encoded + "' | base64 -d");
  }

  // A namespace no identity of the test but the admin may write.
  std::string victim_namespace() {
    other_namespaces_.push_back(ClusterFixture::make_namespace("victim"));
    return other_namespaces_.back();
  }

  std::shared_ptr<kube::Client> tenant_;
  std::vector<std::string> other_namespaces_;
};

}  // namespace hb::testing
