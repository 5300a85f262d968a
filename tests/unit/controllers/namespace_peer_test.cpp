// What a peer of the namespace (anyone who may create Pods there) can and
// cannot do to another Agent's run, as docs/security.md ("The namespace is
// the boundary") says: a Pod made by hand with the Job's controller
// ownerReference and controller-uid label is taken as the run's Pod (no
// field of a Pod tells the Job controller's Pods from a peer's), and its
// result alone cannot lower the charge below the usage the agent's Lease
// last showed; a peer who also rewrites that Lease (running a Pod as the
// agent's runner ServiceAccount) can.
#include <gtest/gtest.h>

#include "api/usage_report.h"
#include "controllers/job_pods.h"
#include "controllers/run_status.h"
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
      api::encode_usage_report({"r1", calls, in, out, 0, calls});
  return lease;
}

RunObservation observe_with(const Json& pod, const Json& lease) {
  static const Json run = with_status(testing::run("r1"), {{"phase", "Running"},
                                                           {"jobName", "r1"},
                                                           {"jobUID", kJobUid},
                                                           {"startedAt", "2024-05-01T12:05:00Z"}});
  static Json the_job = [] {
    Json j = job("r1");
    j["metadata"]["uid"] = kJobUid;
    return j;
  }();
  RunObservationInput in;
  in.run = &run;
  in.job = &the_job;
  const std::vector<Json> pods = pods_of_job({pod}, job_uid_of(&the_job, ""));
  for (const Json& p : pods) in.pods.push_back(&p);
  in.lease = &lease;
  in.now = at("2024-05-01T12:06:10Z");
  in.timeouts = {std::chrono::seconds(300), std::chrono::seconds(30), std::chrono::seconds(120)};
  in.pricing = kTestPricing;
  in.bounds = usage_bounds(AgentSpec{});
  return observe_run(in);
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

// The limit the docs state: the Lease is writable by the agent's runner
// ServiceAccount, which any Pod of the namespace may run as.
TEST(NamespacePeer, APeerThatAlsoRewritesTheLeaseLowersTheCharge) {
  const RunObservation o =
      observe_with(forged_pod(result_json(0, 10, 2)), lease_reporting(1, 10, 2));
  EXPECT_EQ(o.status["usage"]["inputTokens"], 10);
  EXPECT_LT(o.status["usage"]["costCents"].get<double>(), 6.0);
}

}  // namespace
}  // namespace hb::controllers
