// The Agent pass's real writer over a scripted API server: each write is one
// request, counted under its kind, and what it wrote is remembered for the
// next pass's reads (the read-your-writes overlay) or forgotten once deleted.
#include "controllers/shell/agent_api_writes.h"

#include <gtest/gtest.h>

#include "controllers/model/agent_grants.h"
#include "tests/unit/controllers/scripted_reconciler.h"

namespace hb::controllers {
namespace {

using testing::RecordingApi;

struct Writer {
  std::shared_ptr<RecordingApi> api = std::make_shared<RecordingApi>();
  Metrics metrics;
  std::chrono::steady_clock::time_point steady{std::chrono::hours(7)};
  WriteOverlay overlay{[this] { return steady; }};
  KubeAgentApiWrites writes{testing::client_over(api), overlay, metrics};

  double counted(const char* kind) const {
    return metrics.value("heartbeat_api_writes_total", {{"kind", kind}});
  }
};

Json named(const std::string& kind, const std::string& name) {
  return {{"kind", kind}, {"metadata", {{"name", name}, {"namespace", "ns"}}}};
}

TEST(AgentApiWrites, EachWriteIsOneRequestCountedUnderItsKind) {
  Writer w;
  ASSERT_TRUE(w.writes.create_run("ns", named("HeartbeatRun", "r-1")).ok());
  ASSERT_TRUE(w.writes.create_context("ns", named("ConfigMap", "r-1-context")).ok());
  ASSERT_TRUE(w.writes.create_job("ns", named("Job", "r-1")).ok());
  ASSERT_TRUE(w.writes.patch_run_status("ns", "r-1", {{"status", {{"phase", "Running"}}}}).ok());
  ASSERT_TRUE(w.writes.label_run("ns", "r-1", {{"metadata", {{"labels", Json::object()}}}}).ok());
  ASSERT_TRUE(w.writes.adopt_run("ns", "r-1", {{"metadata", Json::object()}}).ok());
  ASSERT_TRUE(w.writes.replace_agent_status("ns", "bot", named("Agent", "bot")).ok());
  ASSERT_TRUE(
      w.writes.create_agent_object(kKindServiceAccounts, "ns", named("ServiceAccount", "sa")).ok());
  ASSERT_TRUE(w.writes.mark_agent_objects_made("ns", "bot-heartbeat", Json::object()).ok());
  ASSERT_TRUE(w.writes.delete_grant(kKindRoles, "ns", "bot-runner", "uid-role").ok());
  ASSERT_TRUE(w.writes.create_event("ns", named("Event", "bot.1")).ok());
  ASSERT_TRUE(w.writes.delete_job("ns", "r-1").ok());
  ASSERT_TRUE(w.writes.delete_run("ns", "r-1").ok());
  EXPECT_EQ(w.api->requests.size(), 13u);
  for (const char* kind :
       {kWriteRunCreate, kWriteContextCreate, kWriteJobCreate, kWriteRunStatus, kWriteRunLabel,
        kWriteRunAdopt, kWriteAgentStatus, kWriteAgentObjectCreate, kWriteAgentObjectMark,
        kWriteAgentGrantDelete, kWriteEvent, kWriteJobDelete, kWriteRunDelete}) {
    EXPECT_EQ(w.counted(kind), 1) << kind;
  }
  const auto grant = w.api->first("DELETE", "/roles/bot-runner");
  ASSERT_TRUE(grant);
  EXPECT_NE(w.api->requests[*grant].body.find("uid-role"), std::string::npos)
      << "conditional on the uid read";
}

TEST(AgentApiWrites, WhatIsWrittenIsRememberedAndWhatIsDeletedForgotten) {
  Writer w;
  ASSERT_TRUE(w.writes.create_job("ns", named("Job", "r-1")).ok());
  ASSERT_TRUE(w.writes.replace_agent_status("ns", "bot", named("Agent", "bot")).ok());
  EXPECT_TRUE(w.overlay.merge(kOverlayJobs, "ns/r-1", std::nullopt));
  EXPECT_TRUE(w.overlay.merge(kOverlayAgents, "ns/bot", std::nullopt));
  ASSERT_TRUE(w.writes.delete_job("ns", "r-1").ok());
  EXPECT_FALSE(w.overlay.merge(kOverlayJobs, "ns/r-1", std::nullopt));
}

// A failed write counts nothing and remembers nothing.
TEST(AgentApiWrites, AFailedWriteIsNeitherCountedNorRemembered) {
  Writer w;
  w.api->fail_url_part = "/jobs";
  const auto created = w.writes.create_job("ns", named("Job", "r-1"));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().kind, kube::ErrorKind::kForbidden);
  EXPECT_EQ(w.counted(kWriteJobCreate), 0);
  EXPECT_FALSE(w.overlay.merge(kOverlayJobs, "ns/r-1", std::nullopt));
}

}  // namespace
}  // namespace hb::controllers
