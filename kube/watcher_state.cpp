#include "kube/watcher_state.h"

namespace hb::kube {

WatcherAction watcher_action(WatcherPhase phase) {
  return phase == WatcherPhase::kEmpty ? WatcherAction::kList : WatcherAction::kWatch;
}

WatcherStep step_watcher(const WatcherState& state, const WatcherOutcome& outcome,
                         bool optional_resource) {
  const bool listing = watcher_action(state.phase) == WatcherAction::kList;
  WatcherStep step;
  step.state = state;
  if (!outcome.error) {
    if (listing) {
      step.state = WatcherState{WatcherPhase::kListed, outcome.resource_version};
      step.listed = true;
    } else {
      step.state.phase = WatcherPhase::kWatching;
      step.reset_backoff = true;  // a watch that ended by the server's timeout is healthy
    }
    return step;
  }
  const ErrorKind kind = *outcome.error;
  if (kind == ErrorKind::kGone) {
    step.state.phase = WatcherPhase::kEmpty;
    step.gone = true;
    return step;
  }
  const bool not_served = kind == ErrorKind::kNotFound || kind == ErrorKind::kForbidden;
  if (listing && optional_resource && not_served) {
    step.state = WatcherState{WatcherPhase::kEmpty, ""};
    step.absent = true;
    step.wait = WatcherWait::kAbsentRecheck;
    return step;
  }
  // A broken stream cannot be trusted to resume; a CRD deleted under the
  // watch: the next list finds it absent.
  if (kind == ErrorKind::kMalformed || (optional_resource && not_served)) {
    step.state.phase = WatcherPhase::kEmpty;
  }
  step.count_error = true;
  step.wait = WatcherWait::kBackoff;
  return step;
}

}  // namespace hb::kube
