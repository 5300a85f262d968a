// The simulation's API server: objects in memory with resourceVersions,
// 409 on a stale write, AlreadyExists, status subresources, merge patches,
// graceful Pod deletion, a garbage collector and one ordered change log the
// simulated watches read. Single-threaded: the simulation steps it.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hb::sim {

using Json = nlohmann::json;
using TimePoint = std::chrono::system_clock::time_point;

// Who sent a request: the checks only hold the operator to its promises.
enum class Actor { kOperator, kRunner, kNode, kUser };

// One change, as every watch of its resource sees it (in rv order).
struct Change {
  uint64_t rv = 0;
  std::string ns;
  std::string type;  // ADDED | MODIFIED | DELETED
  Json object;
  // MODIFIED: the replaced object's labels, as {"metadata":{"labels":..}}:
  // all a watch's selector reads of it (a whole copy was a tenth of the
  // simulation's time, made and freed).
  std::optional<Json> labels_before;
  TimePoint at{};
};

// One resource's changes in rv order, each at a position that never moves
// (its sequence number). Changes every watch has passed are forgotten: a
// simulated day of Lease renewals kept whole would be about 200 MB a seed,
// and freeing it at the end a fifteenth of the simulation's time.
class ChangeLog {
 public:
  uint64_t begin() const { return first_; }
  uint64_t end() const { return first_ + entries_.size(); }
  // The change at `position`, in [begin(), end()).
  const Change& at(uint64_t position) const { return entries_[position - first_]; }
  void push(Change change) { entries_.push_back(std::move(change)); }
  // Forgets the changes before `position` (no-op for those already gone).
  void forget_before(uint64_t position);

 private:
  std::deque<Change> entries_;
  uint64_t first_ = 0;
};

// What the server answers: a status and a body (the object, a list or a Status).
struct Answer {
  int status = 200;
  Json body;
  bool ok() const { return status >= 200 && status < 300; }
};

// Called after every accepted write with the object before and after
// (nullopt: created or removed).
using WriteObserver =
    std::function<void(Actor, const std::string& resource, const std::optional<Json>& before,
                       const std::optional<Json>& after)>;

class ApiServer {
 public:
  explicit ApiServer(std::function<TimePoint()> now) : now_(std::move(now)) {}
  // True time: the server's (and the user's) clock, not the operator's.
  TimePoint now() const { return now_(); }

  Answer get(const std::string& resource, const std::string& ns, const std::string& name) const;
  // ns "" = all namespaces; selector: "k=v,k!=v,k" (the subset the operator uses).
  Answer list(const std::string& resource, const std::string& ns,
              const std::string& selector) const;
  Answer create(Actor actor, const std::string& resource, const std::string& ns, Json object);
  // PUT; `status`: the /status subresource.
  Answer replace(Actor actor, const std::string& resource, const std::string& ns,
                 const std::string& name, Json object, bool status);
  Answer merge_patch(Actor actor, const std::string& resource, const std::string& ns,
                     const std::string& name, const Json& patch, bool status);
  // options: a DeleteOptions body (preconditions honoured).
  Answer remove(Actor actor, const std::string& resource, const std::string& ns,
                const std::string& name, const Json& options);

  // The node's and the checks' direct access (no HTTP, no faults).
  std::vector<Json> objects(const std::string& resource, const std::string& ns = "") const;
  // The same without copies: fn(object) for each, in name order.
  template <typename Fn>
  void for_each(const std::string& resource, Fn fn) const {
    auto it = objects_.find(resource);
    if (it == objects_.end()) return;
    for (const auto& [key, object] : it->second) fn(object);
  }
  // Something was removed since the last garbage collection.
  bool removed_since_collection() const { return removed_; }
  std::optional<Json> object(const std::string& resource, const std::string& ns,
                             const std::string& name) const;
  // The stored object itself (no copy); valid until the next write.
  const Json* peek(const std::string& resource, const std::string& ns,
                   const std::string& name) const {
    return find(resource, ns, name);
  }
  // Stores the node's change (Pod status, Job status), bumping the version.
  void node_update(const std::string& resource, Json object);
  // Removes a Pod whose deletion the kubelet finished.
  void finalize_pod(const std::string& ns, const std::string& name);
  // Dependents whose every owner is gone are deleted (Background propagation).
  void collect_garbage();
  // Whether some object of any resource has this uid: an ownerReference
  // naming none is absent for the garbage collector (as Kubernetes', which
  // looks owners up by uid, not by name).
  bool uid_live(const std::string& uid) const;

  // The change log of `resource` (an empty one if it has none yet).
  const ChangeLog& changes(const std::string& resource) const;
  // Forgets, in each resource's log, the changes before the position
  // `keep_from` gives it; a resource it does not name keeps none (nobody
  // watches it: a watch started later lists first).
  void forget_changes(const std::map<std::string, uint64_t>& keep_from);
  uint64_t resource_version() const { return rv_; }
  // The resourceVersion of the last change to any object of `resource` (0:
  // none yet): who scans a resource can skip it while this stands still.
  uint64_t version_of(const std::string& resource) const {
    auto it = versions_.find(resource);
    return it == versions_.end() ? 0 : it->second;
  }
  void set_observer(WriteObserver observer) { observer_ = std::move(observer); }

 private:
  Json* find(const std::string& resource, const std::string& ns, const std::string& name);
  const Json* find(const std::string& resource, const std::string& ns,
                   const std::string& name) const;
  Answer store(Actor actor, const std::string& resource, const std::optional<Json>& before,
               Json after);
  Answer erase(Actor actor, const std::string& resource, const Json& object);
  void record(const std::string& resource, const std::string& type, const Json& object,
              const Json* before);

  std::function<TimePoint()> now_;
  std::map<std::string, std::map<std::string, Json>> objects_;  // resource -> "ns/name"
  bool removed_ = false;
  std::map<std::string, ChangeLog> changes_;  // resource -> its log
  std::map<std::string, uint64_t> versions_;  // resource -> rv of its last change
  uint64_t rv_ = 1000;
  uint64_t uids_ = 0;
  uint64_t generated_names_ = 0;
  WriteObserver observer_;
};

// A label selector of the form "k=v,k!=v,k" (the subset the operator
// uses), parsed once: a watch tests every change of its resource.
class LabelSelector {
 public:
  explicit LabelSelector(const std::string& selector);
  // Whether the object's labels satisfy it (read in place, not copied).
  bool matches(const Json& object) const;

 private:
  enum class Op { kEquals, kNotEquals, kExists };
  struct Term {
    std::string key, value;
    Op op;
  };
  std::vector<Term> terms_;
};

Answer status_answer(int code, const std::string& reason, const std::string& message);

}  // namespace hb::sim
