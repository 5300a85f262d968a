// The runner's Kubernetes adapters against the local kube-apiserver: the
// Lease renewer (through Heartbeat and LeaseExtender, as the runner wires it)
// and the memory ConfigMap store (through CoreMemoryService), authenticated as
// the run's ServiceAccount with the Role the operator creates for it
// (controllers::build_agent_objects), so the test also proves that Role is
// enough and no more than the runner needs. A fresh namespace per test.
#include "runner/kube_adapters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "controllers/model/names.h"
#include "controllers/pod/job_builder.h"
#include "runner/heartbeat.h"
#include "runner/memory_tools.h"
#include "tests/fakes/fake_clock.h"
#include "tests/integration/kube/cluster.h"

namespace hb::runner {
namespace {

using kube::ApiError;
using kube::ErrorKind;
using kube::Json;
using namespace kube::testing;
using namespace std::chrono_literals;
namespace resources = kube::resources;

constexpr const char* kAgent = "scout";
constexpr const char* kRun = "scout-run-1";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

const kube::Resource& resource_for(const std::string& plural) {
  static const std::vector<const kube::Resource*> known = {
      &resources::kServiceAccounts, &resources::kRoles, &resources::kRoleBindings,
      &resources::kLeases, &resources::kConfigMaps};
  for (const auto* r : known) {
    if (r->resource == plural) return *r;
  }
  throw std::runtime_error("no resource for " + plural);
}

std::string block_value(const MemoryBlocks& blocks, const std::string& label) {
  for (const auto& block : blocks) {
    if (block.label == label) return block.value;
  }
  return "<missing>";
}

class RunnerKubeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    admin_ = make_test_client();
    apply_crds(*admin_);
  }
  static void TearDownTestSuite() { admin_.reset(); }

  void SetUp() override {
    ns_ = unique_namespace("hb-it-runner");
    create_namespace(*admin_, ns_);
  }
  void TearDown() override { delete_namespace(*admin_, ns_); }

  // The Agent and the per-agent objects exactly as the operator creates them:
  // ServiceAccount, Role, RoleBinding, Lease, memory ConfigMap.
  void create_agent_objects() {
    Json agent = agent_manifest(kAgent);
    agent["spec"]["memory"] = {
        {"blocks",
         {{{"label", "human"}, {"value", "Ada runs the farm."}, {"limit", 2000}},
          {{"label", "persona"}, {"value", "Calm and brief."}, {"limit", 500}}}}};
    Json created = admin_->create(resources::kAgents, ns_, agent).or_throw();
    for (auto& [plural, object] :
         controllers::build_agent_objects(controllers::parse_agent_spec(created).spec, {})) {
      admin_->create(resource_for(plural), ns_, object).or_throw();
    }
  }

  MemoryBlocks spec_blocks() const {
    return {{"human", "Ada runs the farm.", 2000}, {"persona", "Calm and brief.", 500}};
  }

  // A client authenticated as the run's ServiceAccount (a TokenRequest), as
  // the runner is inside its Job.
  std::unique_ptr<kube::Client> runner_client() {
    std::string sa = controllers::service_account_name(kAgent);
    kube::Resource token_request{"", "v1", "serviceaccounts/" + sa + "/token"};
    Json answer = admin_
                      ->create(token_request, ns_,
                               {{"apiVersion", "authentication.k8s.io/v1"},
                                {"kind", "TokenRequest"},
                                {"spec", {{"expirationSeconds", 3600}}}})
                      .or_throw();
    kube::ClusterConfig config = admin_->config();
    config.tls.client_cert_pem.clear();
    config.tls.client_key_pem.clear();
    config.username.clear();
    config.password.clear();
    config.token_file.clear();
    config.token = answer["status"]["token"].get<std::string>();
    kube::ClientOptions options;
    options.qps = 0;
    options.user_agent = "heartbeat-runner-it";
    return std::make_unique<kube::Client>(config, options);
  }

  Json lease() { return admin_->get(resources::kLeases, ns_, lease_name()).or_throw(); }
  bool lease_exists() {
    try {
      lease();
      return true;
    } catch (const ApiError& e) {
      if (e.kind() != ErrorKind::kNotFound) throw;
      return false;
    }
  }
  static std::string lease_name() { return controllers::lease_name_for_agent(kAgent); }
  static std::string memory_name() { return controllers::memory_config_map_name(kAgent); }
  MemoryBlocks stored_blocks() {
    Json cm = admin_->get(resources::kConfigMaps, ns_, memory_name()).or_throw();
    return decode_memory_blocks(cm["data"][controllers::kMemoryBlocksKey].get<std::string>())
        .blocks;
  }

  static inline std::shared_ptr<kube::Client> admin_;
  std::string ns_;
};

// ---- Lease ----

TEST_F(RunnerKubeTest, RenewerCreatesAMissingLeaseThenRenewsIt) {
  KubeLeaseRenewer renewer(*admin_, ns_, lease_name(), kRun, kAgent);
  TimePoint t0 = SystemClock().now();
  ASSERT_TRUE(renewer.renew(t0, 300s, nullptr).ok());
  Json first = lease();
  EXPECT_EQ(first["spec"]["holderIdentity"], kRun);
  EXPECT_EQ(first["spec"]["leaseDurationSeconds"], 300);
  EXPECT_EQ(first["spec"]["renewTime"], api::format_micro_time(t0));
  EXPECT_EQ(first["spec"]["acquireTime"], api::format_micro_time(t0));
  EXPECT_EQ(first["metadata"]["labels"]["heartbeat.dev/agent"], kAgent);

  TimePoint t1 = t0 + 1500ms;
  ASSERT_TRUE(renewer.renew(t1, 120s, nullptr).ok());
  Json second = lease();
  EXPECT_EQ(second["spec"]["renewTime"], api::format_micro_time(t1));
  EXPECT_EQ(second["spec"]["leaseDurationSeconds"], 120);
  EXPECT_EQ(second["spec"]["acquireTime"], api::format_micro_time(t0)) << "a renewal keeps it";
  EXPECT_NE(second["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"]);

  // The next run of the agent takes the Lease over.
  KubeLeaseRenewer next(*admin_, ns_, lease_name(), "scout-run-2", kAgent);
  ASSERT_TRUE(next.renew(t1 + 60s, 300s, nullptr).ok());
  EXPECT_EQ(lease()["spec"]["holderIdentity"], "scout-run-2");
  EXPECT_EQ(lease()["spec"]["renewTime"], api::format_micro_time(t1 + 60s));
}

TEST_F(RunnerKubeTest, BeatsRenewTheOperatorsLeaseAtMostOncePerInterval) {
  create_agent_objects();
  ASSERT_FALSE(lease()["spec"].contains("renewTime")) << "the operator creates it unrenewed";
  auto client = runner_client();
  KubeLeaseRenewer renewer(*client, ns_, lease_name(), kRun, kAgent);
  std::vector<std::string> warnings;
  LeaseExtender extender(renewer, 60s, 300s,
                         [&](const std::string& message) { warnings.push_back(message); });
  fakes::FakeClock clock(SystemClock().now());
  Heartbeat heartbeat(clock);
  heartbeat.add_callback(extender.callback());
  TimePoint t0 = clock.now();

  heartbeat.beat();
  EXPECT_EQ(lease()["spec"]["holderIdentity"], kRun);
  EXPECT_EQ(lease()["spec"]["renewTime"], api::format_micro_time(t0));
  EXPECT_EQ(lease()["spec"]["leaseDurationSeconds"], 300);

  clock.jump(10s);
  heartbeat.beat();  // within the interval: no request
  EXPECT_EQ(lease()["spec"]["renewTime"], api::format_micro_time(t0));

  clock.jump(55s);
  heartbeat.beat();
  EXPECT_EQ(lease()["spec"]["renewTime"], api::format_micro_time(t0 + 65s));

  clock.jump(-30s);  // the clock went backwards: renew at once
  heartbeat.beat();
  EXPECT_EQ(lease()["spec"]["renewTime"], api::format_micro_time(t0 + 35s));

  EXPECT_EQ(extender.attempts(), 3);
  EXPECT_EQ(extender.failures(), 0);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(heartbeat.beats(), 4);
}

TEST_F(RunnerKubeTest, RenewalErrorsAreLoggedAndNeverFailTheRun) {
  create_agent_objects();
  auto client = runner_client();
  KubeLeaseRenewer renewer(*client, ns_, lease_name(), kRun, kAgent);
  std::vector<std::string> warnings;
  LeaseExtender extender(renewer, 60s, 300s,
                         [&](const std::string& message) { warnings.push_back(message); });
  fakes::FakeClock clock(SystemClock().now());
  Heartbeat heartbeat(clock);
  heartbeat.add_callback(extender.callback());

  // Someone deletes the Lease: the PATCH finds nothing, and the run's Role
  // may not create one (resourceNames cannot limit create), so it is Forbidden.
  admin_->remove(resources::kLeases, ns_, lease_name()).or_throw();
  ASSERT_TRUE(eventually([&] { return !lease_exists(); }));
  EXPECT_NO_THROW(heartbeat.beat());
  EXPECT_EQ(extender.failures(), 1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("lease renewal failed: ", 0), 0u) << warnings[0];
  EXPECT_NE(lower(warnings[0]).find("forbidden"), std::string::npos) << warnings[0];
  EXPECT_FALSE(lease_exists());

  // The operator puts it back; the next due beat renews again.
  for (auto& [plural, object] : controllers::build_agent_objects(
           controllers::parse_agent_spec(admin_->get(resources::kAgents, ns_, kAgent).or_throw())
               .spec,
           {})) {
    if (plural == "leases") admin_->create(resources::kLeases, ns_, object).or_throw();
  }
  clock.jump(61s);
  heartbeat.beat();
  EXPECT_EQ(extender.failures(), 1);
  EXPECT_EQ(lease()["spec"]["renewTime"], api::format_micro_time(clock.now()));

  // A Lease the Role does not name: the PATCH itself is Forbidden.
  KubeLeaseRenewer other(*client, ns_, "someone-elses-lease", kRun, kAgent);
  LeaseExtender other_extender(other, 60s, 300s,
                               [&](const std::string& message) { warnings.push_back(message); });
  EXPECT_NO_THROW(other_extender.on_beat(clock.now()));
  EXPECT_EQ(other_extender.failures(), 1);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(lower(warnings[1]).find("forbidden"), std::string::npos) << warnings[1];
}

// ---- Memory ConfigMap ----

TEST_F(RunnerKubeTest, MemoryLoadsAndSavesKeepingWhatTheOperatorWrote) {
  create_agent_objects();
  admin_
      ->merge_patch(resources::kConfigMaps, ns_, memory_name(),
                    {{"data", {{"notes.md", "kept by the runner"}}}})
      .or_throw();
  auto client = runner_client();
  KubeMemoryStore store(*client, ns_, memory_name(), kAgent);
  auto snapshot = store.load().value();
  ASSERT_TRUE(snapshot.has_value());
  EXPECT_EQ(snapshot->blocks, spec_blocks());
  EXPECT_FALSE(snapshot->resource_version.empty());

  CoreMemoryService memory(spec_blocks(), &store);
  ASSERT_TRUE(memory.load().ok());
  ToolOutcome outcome =
      memory.edit({MemoryEdit::Kind::kAppend, "human", "Ada prefers mornings.", ""});
  EXPECT_FALSE(outcome.is_error) << outcome.content;
  outcome =
      memory.edit({MemoryEdit::Kind::kReplace, "persona", "Calm, brief, kind.", "Calm and brief."});
  EXPECT_FALSE(outcome.is_error) << outcome.content;
  EXPECT_EQ(memory.saves(), 2);
  EXPECT_EQ(memory.conflicts(), 0);

  Json cm = admin_->get(resources::kConfigMaps, ns_, memory_name()).or_throw();
  MemoryBlocks stored = stored_blocks();
  EXPECT_EQ(block_value(stored, "human"), "Ada runs the farm.\nAda prefers mornings.");
  EXPECT_EQ(block_value(stored, "persona"), "Calm, brief, kind.");
  EXPECT_EQ(stored, memory.blocks());
  EXPECT_EQ(cm["data"]["notes.md"], "kept by the runner");
  EXPECT_EQ(cm["metadata"]["labels"]["heartbeat.dev/agent"], kAgent);
  ASSERT_EQ(cm["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(cm["metadata"]["ownerReferences"][0]["kind"], "Agent");

  // A later heartbeat starts from the saved blocks.
  KubeMemoryStore next_store(*client, ns_, memory_name(), kAgent);
  CoreMemoryService next(spec_blocks(), &next_store);
  ASSERT_TRUE(next.load().ok());
  EXPECT_EQ(next.blocks(), stored);
}

TEST_F(RunnerKubeTest, AConcurrentUpdateIsAConflictAndTheEditIsReappliedOnTheFreshBlocks) {
  create_agent_objects();
  auto client = runner_client();

  // Store level: a save against a stale resourceVersion is a conflict.
  KubeMemoryStore stale(*client, ns_, memory_name(), kAgent);
  auto snapshot = stale.load().value();
  ASSERT_TRUE(snapshot.has_value());
  KubeMemoryStore meanwhile(*admin_, ns_, memory_name(), kAgent);
  MemoryBlocks theirs = meanwhile.load().value()->blocks;
  theirs[0].value += "\nfrom elsewhere";
  std::string their_version =
      meanwhile.save(theirs, meanwhile.load().value()->resource_version).value();
  EXPECT_NE(their_version, snapshot->resource_version);
  EXPECT_TRUE(is_memory_conflict(stale.save(snapshot->blocks, snapshot->resource_version).error()));
  EXPECT_EQ(stored_blocks(), theirs) << "the stale save changed nothing";

  // Service level (what the model's tool call goes through): the 409 reloads,
  // re-applies the edit on the fresh blocks and saves; both edits survive.
  KubeMemoryStore store(*client, ns_, memory_name(), kAgent);
  CoreMemoryService memory(spec_blocks(), &store);
  ASSERT_TRUE(memory.load().ok());
  MemoryBlocks concurrent = meanwhile.load().value()->blocks;
  concurrent[0].value += "\nfrom another writer";
  ASSERT_TRUE(meanwhile.save(concurrent, meanwhile.load().value()->resource_version).ok());

  ToolOutcome outcome = memory.edit({MemoryEdit::Kind::kAppend, "human", "from the runner", ""});
  EXPECT_FALSE(outcome.is_error) << outcome.content;
  EXPECT_EQ(memory.conflicts(), 1);
  EXPECT_EQ(memory.saves(), 1);
  EXPECT_EQ(block_value(stored_blocks(), "human"),
            "Ada runs the farm.\nfrom elsewhere\nfrom another writer\nfrom the runner");
  EXPECT_EQ(memory.blocks(), stored_blocks());

  // A replace whose old text the other writer removed fails with the model's
  // error after the reload, and saves nothing.
  MemoryBlocks removed = meanwhile.load().value()->blocks;
  removed[0].value = "Ada runs the farm.";
  ASSERT_TRUE(meanwhile.save(removed, meanwhile.load().value()->resource_version).ok());
  outcome = memory.edit({MemoryEdit::Kind::kReplace, "human", "x", "from the runner"});
  EXPECT_TRUE(outcome.is_error);
  EXPECT_EQ(memory.saves(), 1);
  EXPECT_EQ(stored_blocks(), removed);
}

TEST_F(RunnerKubeTest, AMissingConfigMapIsCreatedWhenTheClientMay) {
  // Outside a Job (HEARTBEAT_KUBECONFIG with broader rights) the store creates
  // the ConfigMap; two creators race to an AlreadyExists, a conflict.
  KubeMemoryStore store(*admin_, ns_, memory_name(), kAgent);
  EXPECT_FALSE(store.load().value().has_value());
  CoreMemoryService memory(spec_blocks(), &store);
  ASSERT_TRUE(memory.load().ok());
  ToolOutcome outcome = memory.edit({MemoryEdit::Kind::kAppend, "human", "first note", ""});
  EXPECT_FALSE(outcome.is_error) << outcome.content;
  Json cm = admin_->get(resources::kConfigMaps, ns_, memory_name()).or_throw();
  EXPECT_EQ(cm["metadata"]["labels"]["heartbeat.dev/agent"], kAgent);
  EXPECT_EQ(block_value(stored_blocks(), "human"), "Ada runs the farm.\nfirst note");

  KubeMemoryStore late(*admin_, ns_, memory_name(), kAgent);
  EXPECT_TRUE(is_memory_conflict(late.save(spec_blocks(), "").error()));
}

TEST_F(RunnerKubeTest, AConfigMapWithoutBlocksIsUpdatedNotRecreated) {
  admin_
      ->create(resources::kConfigMaps, ns_,
               {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", memory_name()}}},
                {"data", {{"other", "x"}}}})
      .or_throw();
  KubeMemoryStore store(*admin_, ns_, memory_name(), kAgent);
  auto snapshot = store.load().value();
  ASSERT_TRUE(snapshot.has_value());
  EXPECT_TRUE(snapshot->blocks.empty());
  CoreMemoryService memory(spec_blocks(), &store);
  ASSERT_TRUE(memory.load().ok());
  EXPECT_EQ(memory.blocks(), spec_blocks());
  ToolOutcome outcome = memory.edit({MemoryEdit::Kind::kAppend, "human", "noted", ""});
  EXPECT_FALSE(outcome.is_error) << outcome.content;
  EXPECT_EQ(memory.conflicts(), 0);
  EXPECT_EQ(block_value(stored_blocks(), "human"), "Ada runs the farm.\nnoted");
  EXPECT_EQ(admin_->get(resources::kConfigMaps, ns_, memory_name()).or_throw()["data"]["other"],
            "x");
}

TEST_F(RunnerKubeTest, ADeletedConfigMapIsAToolErrorNotACrash) {
  create_agent_objects();
  auto client = runner_client();
  KubeMemoryStore store(*client, ns_, memory_name(), kAgent);
  CoreMemoryService memory(spec_blocks(), &store);
  ASSERT_TRUE(memory.load().ok());
  admin_->remove(resources::kConfigMaps, ns_, memory_name()).or_throw();
  ToolOutcome outcome = memory.edit({MemoryEdit::Kind::kAppend, "human", "lost", ""});
  EXPECT_TRUE(outcome.is_error);
  EXPECT_NE(outcome.content.find("memory could not be saved"), std::string::npos)
      << outcome.content;
  EXPECT_EQ(memory.blocks(), spec_blocks()) << "the edit was not applied";
}

}  // namespace
}  // namespace hb::runner
