#include "controllers/pod/job_pods.h"

#include <algorithm>

#include "api/hb_assert.h"

namespace hb::controllers {

std::string job_uid_of(const Json* job, std::string_view recorded_uid) {
  if (job != nullptr) {
    const std::string uid = string_at(*job, "metadata/uid");
    if (!uid.empty()) return uid;
  }
  return std::string(recorded_uid);
}

namespace {

// Both are asked only for a Job with a uid (controlled_by_job): an empty one
// would match a Pod whose owner or label has none.
bool has_controller_ref(const Json& pod, std::string_view job_uid) {
  HB_ASSERT(!job_uid.empty());
  const Json* owners = find_path(pod, "metadata/ownerReferences");
  if (owners == nullptr || !owners->is_array()) return false;
  for (const Json& o : *owners) {
    if (o.is_object() && o.value("controller", false) && string_at(o, "kind") == "Job" &&
        string_at(o, "uid") == job_uid) {
      return true;
    }
  }
  return false;
}

bool has_controller_uid_label(const Json& pod, std::string_view job_uid) {
  HB_ASSERT(!job_uid.empty());
  const Json* labels = find_path(pod, "metadata/labels");
  if (labels == nullptr || !labels->is_object()) return false;
  for (const char* key : {kLabelControllerUid, kLabelBatchControllerUid}) {
    auto it = labels->find(key);
    if (it != labels->end() && it->is_string() && it->get<std::string>() == job_uid) return true;
  }
  return false;
}

}  // namespace

bool controlled_by_job(const Json& pod, std::string_view job_uid) {
  return !job_uid.empty() && has_controller_ref(pod, job_uid) &&
         has_controller_uid_label(pod, job_uid);
}

std::vector<Json> pods_of_job(std::vector<Json> pods, std::string_view job_uid) {
  std::erase_if(pods, [&](const Json& pod) { return !controlled_by_job(pod, job_uid); });
  HB_ASSERT_MSG(pods.empty() || !job_uid.empty(), "only a Job with a uid has Pods of its own");
  return pods;
}

}  // namespace hb::controllers
