// What a peer of the namespace (anyone who may create Pods there) can and
// cannot do to another Agent's run, as docs/security.md ("The namespace is
// the boundary") says: a Pod made by hand with the Job's controller
// ownerReference and controller-uid label is taken as the run's Pod (no
// field of a Pod tells the Job controller's Pods from a peer's), and its
// result cannot lower the charge below the highest usage the run reported
// on the agent's Lease while an operator watched it; a peer who rewrites
// that Lease lower (running a Pod as the agent's runner ServiceAccount)
// finds the highest report kept in the run's status and charged.
#include <gtest/gtest.h>

#include <algorithm>

#include "api/usage_report.h"
#include "controllers/pod/job_pods.h"
#include "controllers/run/run_status.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace testing;

constexpr const char* kJobUid = "uid-job-r1";

// Everything a peer who may read the Job can copy onto a Pod of its own.
Json forged_pod(const std::string& result) {
  Json p = terminated(pod("r1-forged", "2024-05-01T12:05:40Z"), 0, result);
  p["metadata"]["ownerReferences"] = Json::array({{{"apiVersion", "batch/v1"},
                                                   {"kind", "Job"},
                                                   {"name", "r1"},
                                                   {"uid", kJobUid},
                                                   {"controller", true}}});
  p["metadata"]["labels"] = {
      {kLabelControllerUid, kJobUid}, {kLabelBatchControllerUid, kJobUid}, {"job-name", "r1"}};
  return p;
}

Json lease_reporting(int64_t calls, int64_t in, int64_t out) {
  Json lease = {{"spec", {{"renewTime", "2024-05-01T12:05:30Z"}}}};
  lease["metadata"]["annotations"][api::kAnnotationUsage] =
      api::encode_usage_report({{calls, in, out, 0, calls}, "r1"});
  return lease;
}

const Json kRunningStatus = {{"phase", "Running"},
                             {"jobName", "r1"},
                             {"jobUID", kJobUid},
                             {"startedAt", "2024-05-01T12:05:00Z"}};

// What the operator saw besides the Lease's newest version.
struct Seen {
  std::optional<UsageCounts> high;  // the cache's high-water mark
  Json status = kRunningStatus;     // the run's status as stored
};

RunObservation observe_with(const std::optional<Json>& pod, const Json& lease, Seen seen = {}) {
  const Json run = with_status(testing::run("r1"), seen.status);
  static Json the_job = [] {
    Json j = job("r1");
    j["metadata"]["uid"] = kJobUid;
    return j;
  }();
  RunObservationInput in;
  in.run = &run;
  in.job = &the_job;
  const std::vector<Json> pods =
      pod ? pods_of_job({*pod}, job_uid_of(&the_job, "")) : std::vector<Json>{};
  for (const Json& p : pods) in.pods.push_back(&p);
  in.lease = &lease;
  in.reported_high = seen.high;
  in.now = at("2024-05-01T12:06:10Z");
  in.timeouts = {std::chrono::seconds(300), std::chrono::seconds(30), std::chrono::seconds(120)};
  in.pricing = kTestPricing;
  in.bounds = usage_bounds(AgentSpec{});
  return observe_run(in);
}

bool warns_of(const RunObservation& o, const std::string& reason) {
  return std::any_of(o.events.begin(), o.events.end(),
                     [&](const Event& e) { return e.reason == reason; });
}

TEST(NamespacePeer, AHandMadePodWithTheJobsMarksIsTakenAsTheRunsPod) {
  const Json forged = forged_pod(result_json(0, 1, 1));
  EXPECT_TRUE(controlled_by_job(forged, kJobUid));
  const RunObservation o = observe_with(forged, lease_reporting(0, 0, 0));
  EXPECT_EQ(o.status["phase"], "Succeeded");
  EXPECT_EQ(o.status["podName"], "r1-forged");
}

// The control: a Pod without the Job's UID in both places is not the run's.
TEST(NamespacePeer, APodWithoutTheJobsUidInBothPlacesIsNot) {
  Json label_only = forged_pod(result_json(0, 1, 1));
  label_only["metadata"].erase("ownerReferences");
  EXPECT_FALSE(controlled_by_job(label_only, kJobUid));
  Json owner_only = forged_pod(result_json(0, 1, 1));
  owner_only["metadata"].erase("labels");
  EXPECT_FALSE(controlled_by_job(owner_only, kJobUid));
}

TEST(NamespacePeer, AForgedLowResultIsStillChargedTheLeasesLastReport) {
  // The runner beat after three model calls: 3,000 input and 300 output tokens.
  const RunObservation o =
      observe_with(forged_pod(result_json(0, 10, 2)), lease_reporting(3, 3000, 300));
  EXPECT_EQ(o.status["usage"]["inputTokens"], 3000);
  EXPECT_EQ(o.status["usage"]["outputTokens"], 300);
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 6.0);  // 3000 x 0.001 + 300 x 0.01
}

// The three beats the runner made: three model calls, 3,000 input and 300
// output tokens.
const UsageCounts kHonestHigh{3, 3000, 300, 0, 3};

// The harm, with nothing kept: a Lease rewritten lower than any report the
// operator saw lowers the charge. This is what the tests below would see if
// the operator did not keep the highest report.
TEST(NamespacePeer, ALoweringNoOperatorSawLowersTheCharge) {
  const RunObservation o =
      observe_with(forged_pod(result_json(0, 10, 2)), lease_reporting(1, 10, 2));
  EXPECT_EQ(o.status["usage"]["inputTokens"], 10);
  EXPECT_LT(o.status["usage"]["costCents"].get<double>(), 6.0);
}

TEST(NamespacePeer, ALeaseRewrittenLowerIsChargedTheHighestReportSeen) {
  const RunObservation o = observe_with(forged_pod(result_json(0, 10, 2)),
                                        lease_reporting(1, 10, 2), {.high = kHonestHigh});
  EXPECT_EQ(o.status["usage"]["inputTokens"], 3000);
  EXPECT_EQ(o.status["usage"]["outputTokens"], 300);
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 6.0);
  EXPECT_EQ(o.status[kStatusReportedUsage]["inputTokens"], 3000);
  EXPECT_TRUE(warns_of(o, kReasonUsageReportLowered));
}

TEST(NamespacePeer, ALoweringWhileTheRunGoesOnIsKeptInItsStatusOnce) {
  const RunObservation o =
      observe_with(std::nullopt, lease_reporting(1, 10, 2), {.high = kHonestHigh});
  EXPECT_EQ(o.phase, RunPhase::kRunning);
  EXPECT_EQ(o.status[kStatusReportedUsage]["inputTokens"], 3000);
  EXPECT_EQ(o.status[kStatusReportedUsage]["llmCalls"], 3);
  EXPECT_TRUE(warns_of(o, kReasonUsageReportLowered));
  // Written: the next pass changes nothing and says nothing again.
  const RunObservation again = observe_with(std::nullopt, lease_reporting(1, 10, 2),
                                            {.high = kHonestHigh, .status = o.status});
  EXPECT_EQ(again.status, o.status);
  EXPECT_FALSE(warns_of(again, kReasonUsageReportLowered));
}

TEST(NamespacePeer, ADeletedLeaseOrOneNamingAnotherRunIsALoweringToo) {
  Json other_run = lease_reporting(9, 9000, 900);
  other_run["metadata"]["annotations"][api::kAnnotationUsage] =
      api::encode_usage_report({{9, 9000, 900, 0, 9}, "r0"});
  const RunObservation o = observe_with(std::nullopt, other_run, {.high = kHonestHigh});
  EXPECT_EQ(o.status[kStatusReportedUsage]["inputTokens"], 3000);
  const RunObservation bare = observe_with(std::nullopt, Json::object(), {.high = kHonestHigh});
  EXPECT_EQ(bare.status[kStatusReportedUsage]["inputTokens"], 3000);
}

TEST(NamespacePeer, AfterARestartTheKeptReportStillHolds) {
  Json status = kRunningStatus;
  status[kStatusReportedUsage] = {{"llmCalls", 3},
                                  {"inputTokens", 3000},
                                  {"outputTokens", 300},
                                  {"toolCalls", 0},
                                  {"iterations", 3}};
  // A new process: no high-water mark, only the stored status.
  const RunObservation o =
      observe_with(forged_pod(result_json(0, 10, 2)), lease_reporting(1, 10, 2),
                   {.high = std::nullopt, .status = status});
  EXPECT_EQ(o.status["usage"]["inputTokens"], 3000);
  EXPECT_DOUBLE_EQ(o.status["usage"]["costCents"], 6.0);
}

TEST(NamespacePeer, AnHonestRisingLeaseWritesNothingExtra) {
  const RunObservation o =
      observe_with(std::nullopt, lease_reporting(4, 4000, 400), {.high = kHonestHigh});
  EXPECT_FALSE(o.status.contains(kStatusReportedUsage));
  EXPECT_FALSE(warns_of(o, kReasonUsageReportLowered));
}

// A kept report written by hand with garbage is not believed (the status
// subresource is the operator's, but the reader is strict anyway).
TEST(NamespacePeer, AMalformedKeptReportIsIgnored) {
  Json status = kRunningStatus;
  status[kStatusReportedUsage] = {{"llmCalls", -3}, {"inputTokens", "many"}};
  const RunObservation o =
      observe_with(forged_pod(result_json(0, 10, 2)), lease_reporting(1, 10, 2),
                   {.high = std::nullopt, .status = status});
  EXPECT_EQ(o.status["usage"]["inputTokens"], 10);
}

}  // namespace
}  // namespace hb::controllers
