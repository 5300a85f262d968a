// Which of the Pods indexed under a run (by annotation, a label anyone who
// can create Pods may copy) really belong to it: only those the run's Job
// controls, matched by the Job's UID in both the controller ownerReference
// and the Job controller's controller-uid label. A Pod with a copied
// annotation alone is never taken; a peer of the namespace who copies both
// marks from the Job is (no field of a Pod can tell; docs/security.md,
// "The namespace is the boundary").
#pragma once

#include <string_view>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

// Labels the Job controller puts on its Pods (1.27+ adds the prefixed one).
inline constexpr const char* kLabelControllerUid = "controller-uid";
inline constexpr const char* kLabelBatchControllerUid = "batch.kubernetes.io/controller-uid";

// The Job's UID: the live Job's when it exists, else the one the run's
// status recorded when it started. Empty when neither is known.
std::string job_uid_of(const Json* job, std::string_view recorded_uid);

// True when `pod` is controlled by the Job with `job_uid` (non-empty).
bool controlled_by_job(const Json& pod, std::string_view job_uid);

// The subset of `pods` controlled by the Job with `job_uid`; none when the
// UID is unknown (a run that never recorded one and whose Job is gone).
std::vector<Json> pods_of_job(std::vector<Json> pods, std::string_view job_uid);

}  // namespace hb::controllers
