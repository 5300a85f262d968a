// A slot's run made after its Job: the one write between a due slot and its
// Job is the Job. The Job is created with no ownerReference, carrying the
// run it stands for (kAnnotationRunToMake) and the Agent's uid; the run is
// made from that text by the next pass (or the pass after a crash), and the
// Job is then handed to the run: the run becomes its controller (so deleting
// the run deletes the Job) and the text is dropped. A Job that still carries
// the text awaits its run; one that never gets it is never left behind: a
// pass makes the run whenever it finds such a Job, the Agent gone or not, so
// no heartbeat goes unrecorded or uncharged. Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "controllers/model/json_util.h"

namespace hb::controllers {

// On a Job made before its run: the run to make, as JSON text.
inline constexpr const char* kAnnotationRunToMake = "heartbeat.dev/run-to-make";
// A run object the operator makes is well under this; a larger text is not
// one it wrote, and is ignored.
inline constexpr std::size_t kRunToMakeBytesMax = 4 * 1024;

// Gives a run about to be started Job first its trace id
// (kAnnotationTraceId): its uid does not exist when its Job is built.
void trace_before_uid(Json& run);

// The annotation's text for `run` (make_run_object's, stamped); nullopt
// when it would pass kRunToMakeBytesMax (a tenant's many policies stamped
// on it): that run is made before its Job, as a run always was.
std::optional<std::string> run_to_make_text(const Json& run);

// True when the Job carries a run to make (it has not been handed to it).
bool awaits_its_run(const Json& job);

// The run `job` carries, checked against the Job: the Job has the run's Job
// name, and the run's namespace, Agent name and Agent uid are the Job's.
// nullopt when it carries none or one that does not match.
std::optional<Json> run_carried_by(const Json& job);

// True when `run` is the one `job` was made before and carries: the
// carried run has `run`'s name and `run` is of the Job's Agent incarnation.
// One judgement for a Job found under a run's Job name and for a run found
// under a carried run's name.
bool carries_run(const Json& job, const Json& run);

// The merge patch that hands the Job to its (stored) run: the run its
// controller, the text gone.
Json job_handover_patch(const Json& run);

enum class JobRunStepKind {
  kMakeRun,    // create `run` (AlreadyExists: settled by the writer, as for a slot's run)
  kHandOver,   // patch `job` to be controlled by its run `run_name`
  kDeleteJob,  // `job`'s run name is another's run: the heartbeat is not started
};

struct JobRunStep {
  JobRunStepKind kind = JobRunStepKind::kMakeRun;
  std::string job;       // the Job's name
  std::string run_name;  // kMakeRun, kHandOver
  Json run;              // kMakeRun: the object to create
};

// For each Job awaiting its run (`jobs`, one namespace), given the runs
// listed for its Agent's name (`runs`): make the run when none of that name
// is listed, then hand the Job over. A listed run of that name that is not
// the Job's Agent incarnation's has its Job deleted (that heartbeat cannot
// be recorded); a Job whose text does not check is not the operator's and
// is left alone. In the order of `jobs`.
std::vector<JobRunStep> plan_runs_for_jobs(const std::vector<Json>& jobs,
                                           const std::vector<Json>& runs);

}  // namespace hb::controllers
