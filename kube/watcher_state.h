// The informer's watcher as a state machine (kube-rs kube-runtime's watcher:
// a list, then a watch from the list's resourceVersion, resumed until the
// server says the version is gone). The informer performs each action; this
// pure step says what its outcome leads to.
#pragma once

#include <optional>
#include <string>

#include "kube/errors.h"

namespace hb::kube {

enum class WatcherPhase {
  // Nothing trusted: at the start, after 410 Gone, after a broken stream,
  // after an optional resource went away. The next action lists (every page
  // of it: Client::list_each follows the continue token within the one
  // action, so no half-listed state outlives it).
  kEmpty,
  // A list is in the cache at resource_version; the next action watches
  // from it.
  kListed,
  // A watch from resource_version (moved by its events and bookmarks) has
  // ended; the next action watches again from where it stopped.
  kWatching,
};

enum class WatcherAction { kList, kWatch };

struct WatcherState {
  WatcherPhase phase = WatcherPhase::kEmpty;
  std::string resource_version;  // what a watch resumes from; "" before the first list
  bool operator==(const WatcherState&) const = default;
};

// What the watcher does in a phase.
WatcherAction watcher_action(WatcherPhase phase);

// How an action ended: nullopt error for a list in the cache or a watch the
// server ended (its timeout); resource_version is a successful list's.
struct WatcherOutcome {
  std::optional<ErrorKind> error;
  std::string resource_version;
};

enum class WatcherWait {
  kNone,           // the next action at once
  kBackoff,        // after the jittered backoff
  kAbsentRecheck,  // after kAbsentResourceRecheck (an optional resource not served)
};

struct WatcherStep {
  WatcherState state;
  WatcherWait wait = WatcherWait::kNone;
  bool listed = false;         // a list is in the cache: the informer is synced
  bool reset_backoff = false;  // a watch ended healthy
  bool gone = false;           // 410: relist (counted)
  bool absent = false;         // an optional resource not served: an empty, synced cache
  bool count_error = false;    // a failure counted and logged
  bool operator==(const WatcherStep&) const = default;
};

// The next state after `outcome` of the action `state.phase` asked for.
// `optional_resource`: a 404 or 403 on list means not served (InformerOptions).
WatcherStep step_watcher(const WatcherState& state, const WatcherOutcome& outcome,
                         bool optional_resource);

}  // namespace hb::kube
