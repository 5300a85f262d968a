// Pods are matched to a run by its Job's UID, never by annotation alone.
#include "controllers/pod/job_pods.h"

#include <gtest/gtest.h>

namespace hb::controllers {
namespace {

Json job_pod(const std::string& name, const std::string& owner_uid, const std::string& label_uid,
             bool controller = true) {
  Json pod = {{"metadata",
               {{"name", name},
                {"annotations", {{"heartbeat.dev/run", "r1"}}},
                {"labels", {{"controller-uid", label_uid}, {"job-name", "r1"}}},
                {"ownerReferences", Json::array({{{"apiVersion", "batch/v1"},
                                                  {"kind", "Job"},
                                                  {"name", "r1"},
                                                  {"uid", owner_uid},
                                                  {"controller", controller}}})}}}};
  return pod;
}

std::vector<std::string> names(const std::vector<Json>& pods) {
  std::vector<std::string> out;
  for (const Json& p : pods) out.push_back(string_at(p, "metadata/name"));
  return out;
}

TEST(JobPods, OnlyPodsTheJobControlsByUidInOwnerAndLabel) {
  Json forged_annotation_only = {
      {"metadata", {{"name", "forged"}, {"annotations", {{"heartbeat.dev/run", "r1"}}}}}};
  std::vector<Json> pods = {
      job_pod("real", "job-uid", "job-uid"),
      forged_annotation_only,
      job_pod("label-only", "other-uid", "job-uid"),           // copied label, other owner
      job_pod("owner-only", "job-uid", "other-uid"),           // owner, wrong label
      job_pod("not-controller", "job-uid", "job-uid", false),  // owner but not controller
  };
  EXPECT_EQ(names(pods_of_job(pods, "job-uid")), std::vector<std::string>{"real"});
}

TEST(JobPods, ThePrefixedLabelOfNewerKubernetesCounts) {
  Json pod = job_pod("new", "job-uid", "x");
  pod["metadata"]["labels"] = {{"batch.kubernetes.io/controller-uid", "job-uid"}};
  EXPECT_TRUE(controlled_by_job(pod, "job-uid"));
}

TEST(JobPods, UnknownUidMatchesNothing) {
  std::vector<Json> pods = {job_pod("real", "job-uid", "job-uid")};
  EXPECT_TRUE(pods_of_job(pods, "").empty());
  EXPECT_FALSE(controlled_by_job(pods[0], ""));
}

TEST(JobPods, TheLiveJobsUidWinsOverTheRecordedOne) {
  const Json job = {{"metadata", {{"name", "r1"}, {"uid", "live"}}}};
  EXPECT_EQ(job_uid_of(&job, "recorded"), "live");
  EXPECT_EQ(job_uid_of(nullptr, "recorded"), "recorded");
  EXPECT_EQ(job_uid_of(nullptr, ""), "");
}

}  // namespace
}  // namespace hb::controllers
