// One bad object is one object's problem (issue 55, item 3), against the
// real API server: an Agent nested 130 levels deep in spec.runtime.volumes
// (the one free-form field the CRD keeps) in one namespace, a healthy
// Agent in another; the operator starts, is restarted, and the healthy one
// keeps being reconciled while the deep one is reported by name (log line,
// counter, Event). Where the CRD types a field, the API server refuses the
// same depth at apply, naming the field.
#include "kube/object_refusal.h"

#include <gtest/gtest.h>

#include <sstream>

#include "controllers/model/json_util.h"
#include "kube/object_limits.h"
#include "tests/integration/operator/harness.h"

namespace hb::testing {
namespace {

namespace res = kube::resources;
using controllers::string_at;

json nested(int levels) {
  json deep = 1;
  for (int i = 0; i < levels; ++i) deep = json{{"a", std::move(deep)}};
  return deep;
}

class ObjectRefusalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ClusterFixture::install_crds(); }
  void SetUp() override {
    client_ = ClusterFixture::client();
    bad_ns_ = ClusterFixture::make_namespace("it-refused");
    good_ns_ = ClusterFixture::make_namespace("it-healthy");
  }
  void TearDown() override {
    if (HasFailure() && operator_) {
      std::cout << "operator log " << operator_->log_path() << " ends with:\n"
                << tail_of_file(operator_->log_path()) << std::endl;
    }
    if (operator_) operator_->kill(SIGKILL);
    for (const std::string& ns : {bad_ns_, good_ns_}) {
      (void)client_->remove(res::kNamespaces, "", ns);
    }
  }

  void start_operator() {
    if (!operator_) {
      const std::string log = env("HB_BUILD_DIR", ".") + "/Testing/operator-" + bad_ns_ + ".log";
      operator_ = std::make_unique<OperatorProcess>(
          std::vector<std::string>{
              "--namespace=" + bad_ns_ + "," + good_ns_, "--leader-election-namespace=" + good_ns_,
              "--leader-election-id=op", "--runner-image=runner:test", "--log-level=debug"},
          log);
    }
    const bool ready = operator_->start_until_ready(60s);
    ASSERT_TRUE(ready) << "operator not ready (exit status " << operator_->exit_status() << ")";
  }

  json agent(const std::string& ns, const std::string& name) {
    return client_->get(res::kAgents, ns, name).or_throw();
  }
  // The healthy Agent's current generation is the one its status observed.
  bool observed(const std::string& name) {
    const json a = agent(good_ns_, name);
    return a["status"].value("observedGeneration", int64_t{0}) == a["metadata"]["generation"];
  }
  std::vector<json> refusal_events(const std::string& ns, const std::string& name) {
    std::vector<json> out;
    const json events = client_->list(res::kEvents, ns).or_throw();  // held: items() would dangle
    for (const json& e : events["items"]) {
      if (e.value("reason", "") == "ObjectRefused" && e["involvedObject"]["name"] == name) {
        out.push_back(e);
      }
    }
    return out;
  }
  double refused_total(const std::string& reason) {
    std::istringstream lines(operator_->get(operator_->metrics_port(), "/metrics"));
    double total = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("heartbeat_objects_refused_total{", 0) != 0) continue;
      if (line.find("resource=\"agents.heartbeat.dev\"") == std::string::npos) continue;
      if (line.find("reason=\"" + reason + "\"") == std::string::npos) continue;
      total += std::stod(line.substr(line.rfind(' ') + 1));
    }
    return total;
  }

  std::shared_ptr<kube::Client> client_;
  std::string bad_ns_, good_ns_;
  std::unique_ptr<OperatorProcess> operator_;
};

TEST_F(ObjectRefusalTest, ADeepAgentInOneNamespaceStopsNoOtherAcrossARestart) {
  const json heartbeat = {{"prompt", "Heartbeat."}, {"interval", "1h"}};
  client_->create(res::kAgents, good_ns_, agent_manifest("healthy", heartbeat)).or_throw();
  client_
      ->create(
          res::kAgents, bad_ns_,
          agent_manifest("deep", heartbeat,
                         {{"runtime", {{"volumes", {{{"name", "v"}, {"csi", nested(130)}}}}}}}))
      .or_throw();
  // Control: the API server stored it as deep as it was sent, past the
  // operator's bound (the list page that failed before).
  const std::string stored = agent(bad_ns_, "deep").dump();
  ASSERT_GT(kube::measure_object_text(stored).depth, kube::kKubeObjectDepthMax);

  start_operator();
  ASSERT_TRUE(wait_until([&] { return observed("healthy"); }, 30s))
      << agent(good_ns_, "healthy").dump();
  ASSERT_TRUE(wait_until([&] { return !refusal_events(bad_ns_, "deep").empty(); }, 30s));
  const json event = refusal_events(bad_ns_, "deep").front();
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["involvedObject"]["kind"], "Agent");
  EXPECT_EQ(event["involvedObject"]["uid"], agent(bad_ns_, "deep")["metadata"]["uid"]);
  EXPECT_NE(event["message"].get<std::string>().find("nested more than 128"), std::string::npos);
  EXPECT_GE(refused_total("too_deep"), 1);
  EXPECT_FALSE(agent(bad_ns_, "deep").contains("status") &&
               agent(bad_ns_, "deep")["status"].value("observedGeneration", 0) > 0)
      << "the deep Agent was reconciled";
  const std::string log = tail_of_file(operator_->log_path(), 1 << 20);
  EXPECT_NE(log.find("event=object_refused resource=agents.heartbeat.dev object=\"" + bad_ns_ +
                     "/deep\""),
            std::string::npos);
  EXPECT_EQ(log.find(R"({"a":{"a":)"), std::string::npos) << "the object's content was logged";

  // Restarted (the relist the issue saw crash-loop), the healthy Agent is
  // reconciled still: an edit is observed.
  operator_->kill(SIGKILL);
  start_operator();
  client_
      ->merge_patch(res::kAgents, good_ns_, "healthy",
                    {{"spec", {{"heartbeat", {{"prompt", "Again."}}}}}})
      .or_throw();
  EXPECT_TRUE(wait_until([&] { return observed("healthy"); }, 30s));
  EXPECT_GE(refused_total("too_deep"), 1);

  // On the watch: the healthy Agent edited past the bound is refused and
  // reported by name; the operator stays ready.
  client_->create(res::kAgents, good_ns_, agent_manifest("other", heartbeat)).or_throw();
  ASSERT_TRUE(wait_until([&] { return observed("other"); }, 30s));
  client_
      ->merge_patch(
          res::kAgents, good_ns_, "healthy",
          {{"spec", {{"runtime", {{"volumes", {{{"name", "v"}, {"csi", nested(130)}}}}}}}}})
      .or_throw();
  EXPECT_TRUE(wait_until([&] { return !refusal_events(good_ns_, "healthy").empty(); }, 30s));
  EXPECT_TRUE(operator_->ready());
  client_
      ->merge_patch(res::kAgents, good_ns_, "other",
                    {{"spec", {{"heartbeat", {{"prompt", "Still."}}}}}})
      .or_throw();
  EXPECT_TRUE(wait_until([&] { return observed("other"); }, 30s));
  EXPECT_NE(
      tail_of_file(operator_->log_path(), 1 << 20).find("object=\"" + good_ns_ + "/healthy\" uid="),
      std::string::npos);
}

// Where the CRD types the field, the same depth is refused at apply and
// the answer names the field; the free-form field (the control) takes it.
TEST_F(ObjectRefusalTest, ATypedFieldRefusesTheDepthAtApplyNamingIt) {
  const json heartbeat = {{"prompt", "Heartbeat."}, {"interval", "1h"}};
  const json env = json::array(
      {{{"name", "X"}, {"valueFrom", {{"secretKeyRef", {{"name", nested(130)}, {"key", "k"}}}}}}});
  const kube::Result<json> refused = client_->create(
      res::kAgents, bad_ns_, agent_manifest("deep-env", heartbeat, {{"runtime", {{"env", env}}}}));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, kube::ErrorKind::kInvalid);
  EXPECT_NE(refused.error().describe().find("spec.runtime.env.valueFrom.secretKeyRef.name"),
            std::string::npos)
      << refused.error().describe();
  // Two sources in one valueFrom are refused too (a Pod takes one).
  const json two = json::array({{{"name", "X"},
                                 {"valueFrom",
                                  {{"secretKeyRef", {{"name", "s"}, {"key", "k"}}},
                                   {"fieldRef", {{"fieldPath", "metadata.name"}}}}}}});
  EXPECT_FALSE(client_
                   ->create(res::kAgents, bad_ns_,
                            agent_manifest("two-sources", heartbeat, {{"runtime", {{"env", two}}}}))
                   .ok());
  // Control: the free-form volumes take the same depth (the operator's
  // refusal is the defence there).
  EXPECT_TRUE(
      client_
          ->create(
              res::kAgents, bad_ns_,
              agent_manifest("deep-volume", heartbeat,
                             {{"runtime", {{"volumes", {{{"name", "v"}, {"csi", nested(130)}}}}}}}))
          .ok());
}

}  // namespace
}  // namespace hb::testing
