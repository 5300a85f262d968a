// The Kubernetes client against a real kube-apiserver: CRUD of both CRDs,
// status subresource, conflicts, validation, paging, watch and informer.
#include <unistd.h>

#include <filesystem>

#include "kube/informer.h"
#include "tests/integration/kube/cluster.h"

namespace hb::kube {
namespace {

using namespace hb::kube::testing;

class ApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    client_ = make_test_client();
    apply_crds(*client_);
    ns_ = unique_namespace("hb-it-api");
    create_namespace(*client_, ns_);
  }
  static void TearDownTestSuite() {
    if (client_ && !ns_.empty()) delete_namespace(*client_, ns_);
    client_.reset();
  }
  static inline std::shared_ptr<Client> client_;
  static inline std::string ns_;
};

TEST_F(ApiTest, AgentCrudAndStatusSubresource) {
  auto& c = *client_;
  Json created = c.create(resources::kAgents, ns_, agent_manifest("crud")).or_throw();
  EXPECT_EQ(created["spec"]["type"], "memgpt_agent");
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());

  Json got = c.get(resources::kAgents, ns_, "crud").or_throw();
  EXPECT_EQ(got["spec"]["heartbeat"]["interval"], "5m");

  // A spec change through the main resource bumps the generation.
  got["spec"]["heartbeat"]["interval"] = "10m";
  Json replaced = c.replace(resources::kAgents, ns_, "crud", got).or_throw();
  EXPECT_EQ(replaced["spec"]["heartbeat"]["interval"], "10m");
  EXPECT_EQ(replaced["metadata"]["generation"], 2);

  // Status only changes through the status subresource.
  Json patched = c.merge_patch(resources::kAgents, ns_, "crud", {{"status", {{"phase", "Sneaky"}}}})
                     .or_throw();
  EXPECT_FALSE(patched.contains("status") && patched["status"].contains("phase"));
  Json with_status =
      c.merge_patch_status(resources::kAgents, ns_, "crud", {{"status", {{"phase", "Idle"}}}})
          .or_throw();
  EXPECT_EQ(with_status["status"]["phase"], "Idle");
  EXPECT_EQ(with_status["metadata"]["generation"], 2);  // status writes leave generation alone

  with_status["status"]["phase"] = "Running";
  Json status_replaced = c.replace_status(resources::kAgents, ns_, "crud", with_status).or_throw();
  EXPECT_EQ(status_replaced["status"]["phase"], "Running");

  c.remove(resources::kAgents, ns_, "crud").or_throw();
  EXPECT_TRUE(eventually([&] {
    try {
      c.get(resources::kAgents, ns_, "crud").or_throw();
      return false;
    } catch (const ApiError& e) {
      return e.kind() == ErrorKind::kNotFound;
    }
  }));
}

TEST_F(ApiTest, HeartbeatRunCrudWithLabels) {
  auto& c = *client_;
  Json run = {{"apiVersion", "heartbeat.dev/v1alpha1"},
              {"kind", "HeartbeatRun"},
              {"metadata", {{"name", "run-1"}, {"labels", {{"heartbeat.dev/agent", "a1"}}}}},
              {"spec", {{"agentRef", {{"name", "a1"}}}, {"invocationSource", "manual"}}}};
  c.create(resources::kHeartbeatRuns, ns_, run).or_throw();
  run["metadata"]["name"] = "run-2";
  run["metadata"]["labels"]["heartbeat.dev/agent"] = "a2";
  c.create(resources::kHeartbeatRuns, ns_, run).or_throw();
  c.merge_patch_status(resources::kHeartbeatRuns, ns_, "run-1",
                       {{"status", {{"phase", "Succeeded"}, {"exitCode", 0}}}})
      .or_throw();

  ListOptions by_agent;
  by_agent.label_selector = "heartbeat.dev/agent=a1";
  Json list = c.list(resources::kHeartbeatRuns, ns_, by_agent).or_throw();
  ASSERT_EQ(list["items"].size(), 1u);
  EXPECT_EQ(list["items"][0]["status"]["phase"], "Succeeded");
  EXPECT_EQ(list["items"][0]["spec"]["cancel"], false);  // defaulted by the schema

  c.remove(resources::kHeartbeatRuns, ns_, "run-1").or_throw();
  c.remove(resources::kHeartbeatRuns, ns_, "run-2").or_throw();
}

TEST_F(ApiTest, StaleResourceVersionIsConflict) {
  auto& c = *client_;
  Json a = c.create(resources::kAgents, ns_, agent_manifest("stale")).or_throw();
  Json fresh = a;
  fresh["spec"]["paused"] = true;
  c.replace(resources::kAgents, ns_, "stale", fresh).or_throw();
  a["spec"]["paused"] = false;  // still carries the old resourceVersion
  try {
    c.replace(resources::kAgents, ns_, "stale", a).or_throw();
    FAIL() << "expected 409";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConflict);
    EXPECT_EQ(e.code(), 409);
    EXPECT_NE(std::string(e.what()).find("the object has been modified"), std::string::npos)
        << e.what();
  }
  // A precondition on delete is checked too.
  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "00000000-0000-0000-0000-000000000000";
  try {
    c.remove(resources::kAgents, ns_, "stale", wrong_uid).or_throw();
    FAIL() << "expected 409";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConflict);
  }
  c.remove(resources::kAgents, ns_, "stale").or_throw();
}

TEST_F(ApiTest, AlreadyExistsAndNotFound) {
  auto& c = *client_;
  c.create(resources::kAgents, ns_, agent_manifest("twice")).or_throw();
  try {
    c.create(resources::kAgents, ns_, agent_manifest("twice")).or_throw();
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAlreadyExists);
  }
  try {
    c.get(resources::kAgents, ns_, "never-was").or_throw();
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_NE(std::string(e.what()).find("never-was"), std::string::npos);
  }
  c.remove(resources::kAgents, ns_, "twice").or_throw();
}

TEST_F(ApiTest, InvalidManifestsNameTheField) {
  auto& c = *client_;
  struct Case {
    std::string field;
    std::function<void(Json&)> mutate;
  };
  std::vector<Case> cases = {
      {"spec.heartbeat.interval", [](Json& a) { a["spec"]["heartbeat"]["interval"] = "5x"; }},
      {"spec.type", [](Json& a) { a["spec"]["type"] = "chatbot"; }},
      {"spec.model.provider", [](Json& a) { a["spec"]["model"]["provider"] = "cohere"; }},
      {"spec.budget.monthlyCents", [](Json& a) { a["spec"]["budget"]["monthlyCents"] = -5; }},
      {"spec.model", [](Json& a) { a["spec"].erase("model"); }},
  };
  for (auto& tc : cases) {
    Json agent = agent_manifest("invalid");
    tc.mutate(agent);
    try {
      c.create(resources::kAgents, ns_, agent).or_throw();
      ADD_FAILURE() << "accepted a manifest with a bad " << tc.field;
      c.remove(resources::kAgents, ns_, "invalid").or_throw();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalid) << e.what();
      bool named = false;
      for (const auto& cause : e.causes())
        named = named || cause.field.find(tc.field) != std::string::npos;
      EXPECT_TRUE(named) << tc.field << " not among the causes of: " << e.what();
      EXPECT_NE(std::string(e.what()).find(tc.field), std::string::npos) << e.what();
    }
  }
}

TEST_F(ApiTest, ListPagesWithContinue) {
  auto& c = *client_;
  for (int i = 0; i < 7; ++i) {
    Json a = agent_manifest("page-" + std::to_string(i));
    a["metadata"]["labels"]["set"] = "paging";
    c.create(resources::kAgents, ns_, a).or_throw();
  }
  ListOptions page;
  page.limit = 3;
  page.label_selector = "set=paging";
  Json first = c.list(resources::kAgents, ns_, page).or_throw();
  EXPECT_EQ(first["items"].size(), 3u);
  EXPECT_FALSE(first["metadata"]["continue"].get<std::string>().empty());
  Json all = c.list_all(resources::kAgents, ns_, page).or_throw();
  EXPECT_EQ(all["items"].size(), 7u);
  EXPECT_FALSE(all["metadata"]["resourceVersion"].get<std::string>().empty());
  for (int i = 0; i < 7; ++i)
    c.remove(resources::kAgents, ns_, "page-" + std::to_string(i)).or_throw();
}

TEST_F(ApiTest, InformerSeesAddModifyDelete) {
  auto& c = *client_;
  std::mutex mu;
  std::vector<std::string> seen;
  InformerOptions options;
  options.namespace_ = ns_;
  options.label_selector = "team=watch";
  Informer informer(client_, resources::kAgents, options);
  informer.set_handlers({[&](const Json& o) {
                           std::lock_guard l(mu);
                           seen.push_back("add " + o["metadata"]["name"].get<std::string>());
                         },
                         [&](const Json&, const Json& o) {
                           std::lock_guard l(mu);
                           seen.push_back(
                               "update " + o["metadata"]["name"].get<std::string>() +
                               " paused=" + (o["spec"].value("paused", false) ? "true" : "false"));
                         },
                         [&](const Json& o) {
                           std::lock_guard l(mu);
                           seen.push_back("delete " + o["metadata"]["name"].get<std::string>());
                         }});
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(std::chrono::seconds(20)));

  Json a = agent_manifest("watched");
  a["metadata"]["labels"]["team"] = "watch";
  c.create(resources::kAgents, ns_, a).or_throw();
  c.merge_patch(resources::kAgents, ns_, "watched", {{"spec", {{"paused", true}}}}).or_throw();
  c.remove(resources::kAgents, ns_, "watched").or_throw();
  auto expected =
      std::vector<std::string>{"add watched", "update watched paused=true", "delete watched"};
  EXPECT_TRUE(eventually([&] {
    std::lock_guard l(mu);
    return seen == expected;
  })) << ::testing::PrintToString(seen);
  EXPECT_EQ(informer.store().size(), 0u);
  informer.stop();
}

// An optional resource the server does not serve (a CRD not installed):
// the informer syncs an empty cache instead of retrying forever, so the
// operator starts; a required one does not sync.
TEST_F(ApiTest, AnOptionalResourceThatIsNotServedSyncsEmpty) {
  const Resource missing{"heartbeat.dev", "v1alpha1", "nosuchpolicies"};
  InformerOptions options;
  options.namespace_ = ns_;
  options.optional_resource = true;
  Informer optional(client_, missing, options);
  optional.start();
  EXPECT_TRUE(optional.wait_for_sync(std::chrono::seconds(10)));
  EXPECT_EQ(optional.store().size(), 0u);
  optional.stop();
  options.optional_resource = false;
  Informer required(client_, missing, options);
  required.start();
  EXPECT_FALSE(required.wait_for_sync(std::chrono::seconds(2)));
  required.stop();
}

TEST_F(ApiTest, WrongCertificateAuthorityIsNamed) {
  ClusterConfig config = client_->config();
  config.tls.ca_pem.clear();
  config.tls.ca_file = "/etc/ssl/certs/ca-certificates.crt";  // public CAs: not the local one
  config.ca_description = config.tls.ca_file;
  Client wrong(config);
  const Result<Json> got = wrong.get(resources::kNamespaces, "", "default");
  ASSERT_FALSE(got.ok()) << "expected a TLS failure";
  EXPECT_EQ(got.error().kind, ErrorKind::kTransport);
  EXPECT_EQ(got.error().transport_kind, http::TransportError::Kind::kTls) << got.error().describe();
  EXPECT_NE(got.error().describe().find("/etc/ssl/certs/ca-certificates.crt"), std::string::npos)
      << got.error().describe();
}

// A configured CA is the only one trusted: the system store (here pointed
// at the cluster's own CA through SSL_CERT_FILE, which OpenSSL's default
// paths honour) must not vouch for the API server behind the configured one.
TEST_F(ApiTest, ConfiguredCertificateAuthorityIsTheOnlyOneTrusted) {
  const std::string dir = ::testing::TempDir() + "hb-unrelated-ca-" + std::to_string(::getpid());
  const std::string make_ca = "mkdir -p " + dir + " && openssl req -x509 -newkey rsa:2048 -nodes " +
                              "-keyout " + dir + "/ca.key -out " + dir + "/ca.crt -days 1 " +
                              "-subj /CN=unrelated-ca >/dev/null 2>&1";
  ASSERT_EQ(std::system(make_ca.c_str()), 0);
  const std::string cluster_ca = std::string(std::getenv("HB_CONTROL_PLANE_DIR")) + "/pki/ca.crt";
  ::setenv("SSL_CERT_FILE", cluster_ca.c_str(), 1);
  ClusterConfig config = client_->config();
  config.tls.ca_pem.clear();
  config.tls.ca_file = dir + "/ca.crt";
  config.ca_description = config.tls.ca_file;
  Client unrelated(config);
  const Result<Json> answer = unrelated.get(resources::kNamespaces, "", "default");
  const bool refused =
      !answer.ok() && answer.error().transport_kind == http::TransportError::Kind::kTls;
  // Control: with no CA configured the system store is used, and it trusts the cluster.
  config.tls.ca_file.clear();
  config.ca_description = "system CAs";
  Client system_store(config);
  EXPECT_TRUE(system_store.get(resources::kNamespaces, "", "default").ok());
  ::unsetenv("SSL_CERT_FILE");
  std::filesystem::remove_all(dir);  // the unrelated CA's key is of no use after this test
  EXPECT_TRUE(refused) << "a CA outside the configured one was trusted";
}

TEST_F(ApiTest, UnknownTokenIsUnauthorized) {
  ClusterConfig config = client_->config();
  config.tls.client_cert_pem.clear();
  config.tls.client_key_pem.clear();
  config.token = "not-a-real-token";
  Client anonymous(config);
  EXPECT_TRUE(anonymous.get(resources::kNamespaces, "", "default").is(ErrorKind::kUnauthorized));
}

}  // namespace
}  // namespace hb::kube
