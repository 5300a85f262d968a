// What the operator keeps of the Jobs and Pods it made: the members its
// decisions read (run_pod_state.h, job_pods.h, run_status.h, the cache's
// indexes), nothing else. A Job's Pod template with the run's context
// document, and a Pod's spec, are nearly all of their size and nothing reads
// them after creation; kept whole they cost memory per cached object and a
// parse per read (issue: 10,000 agents in 64 MiB). Pure.
#pragma once

#include <memory>

#include "controllers/model/json_util.h"
#include "kube/text_cut.h"

namespace hb::controllers {

// Both keep kind, apiVersion and, of the metadata, identity, times,
// labels, owners and only the agent and run annotations the cache indexes by.

// A Job also keeps status.conditions and, of its template, the policies
// stamp (run_record.h admitting_policies) and the cents held for the run
// (budget_hold_ahead.h).
void project_job(Json& job);

// A Pod also keeps status.phase, reason, conditions and each container's
// name and state, with a termination message only for the runner container
// (the tools container's is the agent's to write and is never read).
void project_pod(Json& pod);

// What of a watched Job's and Pod's text the two projections above, and
// the cache before them (the owner's annotations, the store's key and
// resourceVersion), may read: the cache cuts each event's text to it before
// the parse (kube/text_cut.h), so a Job's Pod template and a Pod's spec
// are skipped, not parsed and then dropped. A superset of what the
// projections keep; they still run on what is parsed.
std::shared_ptr<const kube::TextCut> job_text_cut();
std::shared_ptr<const kube::TextCut> pod_text_cut();

// A settled run (final, its cost recorded) is only read for its history
// (phase, times, tokens and cost, output for the next runs' context) and is
// never written again: its labels, conditions, log reference, Pod name,
// idle flag, usage detail and bookkeeping are dropped, and so are its UID,
// owners and Job name and UID (they find its Job and Pods, which the cache
// lets go when the run settles; the owner is the agent it is indexed by).
// Any other run is kept whole.
void project_run(Json& run);

// A settled run's output is read only by the next runs' context, which
// shows the agent's newest contextRuns: the cache drops the others'
// (run_index.h decides which) and marks the run with status.<this> = true,
// so a reader that needs it after all (contextRuns raised, a newer run
// deleted) knows to read the run from the API server.
inline constexpr const char* kStatusOutputNotCached = "outputNotCached";
// Settled, with an output the cache could drop.
bool settled_with_output(const Json& run);
void drop_output(Json& run);
bool output_dropped(const Json& run);

}  // namespace hb::controllers
