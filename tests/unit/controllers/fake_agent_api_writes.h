// The Agent pass's API writes as a unit test records them, modelled on the
// CronJob controller's fakeJobControl: every call in order with the object
// it sent, a kind of call told to fail, and names whose create answers
// AlreadyExists with the object a test says is there. Any other write
// succeeds, its object echoed with a uid and a newer resourceVersion (as
// RecordingApi answers). It remembers nothing for the reconciler's reads:
// a test whose next pass must see a write puts it in the cache itself.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controllers/run/cache_projection.h"
#include "controllers/shell/agent_api_writes.h"
#include "kube/request_priority.h"
#include "tests/unit/controllers/scripted_reconciler.h"

namespace hb::controllers::testing {

// The names of the calls, one per AgentApiWrites method (create_run and
// create_or_find_run are both "create run": the same request).
inline constexpr const char* kCallCreateRun = "create run";
inline constexpr const char* kCallAdoptRun = "adopt run";
inline constexpr const char* kCallLabelRun = "label run";
inline constexpr const char* kCallPatchRunStatus = "patch run status";
inline constexpr const char* kCallDeleteRun = "delete run";
inline constexpr const char* kCallCreateContext = "create context";
inline constexpr const char* kCallCreateJob = "create job";
inline constexpr const char* kCallDeleteJob = "delete job";
inline constexpr const char* kCallHandOverJob = "hand over job";
inline constexpr const char* kCallReplaceAgentStatus = "replace agent status";
inline constexpr const char* kCallCreateAgentObject = "create agent object";
inline constexpr const char* kCallMarkAgentObjectsMade = "mark agent objects made";
inline constexpr const char* kCallDeleteGrant = "delete grant";
inline constexpr const char* kCallCreateEvent = "create event";

struct WriteCall {
  std::string call;  // kCall*
  std::string ns;
  std::string name;
  std::string kind;  // the per-agent object's or grant's kind (agent_grants.h kKind*)
  Json object;       // what the call sent: the object, the patch or the body
  // The pass's priority and give-way time on the thread when it wrote,
  // which the client sends the request with.
  kube::RequestPriority priority;
  kube::GiveWayTime give_way;
};

class FakeAgentApiWrites final : public AgentApiWrites {
 public:
  std::vector<WriteCall> calls;
  // Calls (kCall*) that fail with `failure`.
  std::set<std::string> failing;
  kube::Error failure = forbidden();
  // By object name: a create of that name answers AlreadyExists; a create
  // that settles it finds this object.
  std::map<std::string, Json> existing;
  // When set, each call's name and object name are appended here too (a
  // test ordering writes against the reads its RecordingApi saw).
  std::vector<std::string>* journal = nullptr;

  // The index of the first call of `call` whose name is `name` ("": any).
  std::optional<std::size_t> first(const std::string& call, const std::string& name = "") const {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].call == call && (name.empty() || calls[i].name == name)) return i;
    }
    return std::nullopt;
  }
  std::size_t count(const std::string& call) const {
    std::size_t n = 0;
    for (const WriteCall& c : calls) n += c.call == call;
    return n;
  }
  static kube::Error forbidden() {
    kube::Error e;
    e.kind = kube::ErrorKind::kForbidden;
    e.code = 403;
    e.reason = "Forbidden";
    return e;
  }

  kube::Result<Json> create_run(const std::string& ns, const Json& run) override {
    HB_TRY_ASSIGN(CreatedOrFound made, create(kCallCreateRun, ns, "", run, false));
    return std::move(made.object);
  }
  kube::Result<CreatedOrFound> create_or_find_run(const std::string& ns, const Json& run) override {
    return create(kCallCreateRun, ns, "", run, true);
  }
  kube::Result<Json> adopt_run(const std::string& ns, const std::string& name,
                               const Json& patch) override {
    return write(kCallAdoptRun, ns, name, "", patch);
  }
  kube::Result<Json> label_run(const std::string& ns, const std::string& name,
                               const Json& patch) override {
    return write(kCallLabelRun, ns, name, "", patch);
  }
  kube::Result<Json> patch_run_status(const std::string& ns, const std::string& name,
                                      const Json& patch) override {
    return write(kCallPatchRunStatus, ns, name, "", patch);
  }
  kube::Result<bool> delete_run(const std::string& ns, const std::string& name) override {
    HB_TRY(write(kCallDeleteRun, ns, name, "", Json()));
    return true;
  }
  kube::Result<CreatedOrFound> create_context(const std::string& ns,
                                              const Json& config_map) override {
    return create(kCallCreateContext, ns, "", config_map, true);
  }
  kube::Result<CreatedOrFound> create_job(const std::string& ns, const Json& job) override {
    return create(kCallCreateJob, ns, "", job, true);
  }
  kube::Result<bool> delete_job(const std::string& ns, const std::string& name) override {
    HB_TRY(write(kCallDeleteJob, ns, name, "", Json()));
    return true;
  }
  kube::Result<Json> hand_over_job(const std::string& ns, const std::string& name,
                                   const Json& patch) override {
    return write(kCallHandOverJob, ns, name, "", patch);
  }
  kube::Result<Json> replace_agent_status(const std::string& ns, const std::string& name,
                                          const Json& agent) override {
    return write(kCallReplaceAgentStatus, ns, name, "", agent);
  }
  kube::Result<CreatedOrFound> create_agent_object(const std::string& kind, const std::string& ns,
                                                   const Json& object) override {
    return create(kCallCreateAgentObject, ns, kind, object, true);
  }
  kube::Done mark_agent_objects_made(const std::string& ns, const std::string& lease_name,
                                     const Json& patch) override {
    HB_TRY(write(kCallMarkAgentObjectsMade, ns, lease_name, "", patch));
    return kube::done();
  }
  kube::Result<bool> delete_grant(const std::string& kind, const std::string& ns,
                                  const std::string& name, const std::string& uid) override {
    HB_TRY(write(kCallDeleteGrant, ns, name, kind, {{"preconditions", {{"uid", uid}}}}));
    return true;
  }
  kube::Done create_event(const std::string& ns, const Json& event) override {
    HB_TRY(write(kCallCreateEvent, ns, name_of(event), "", event));
    return kube::done();
  }

 private:
  void record(const char* call, const std::string& ns, const std::string& name,
              const std::string& kind, const Json& object) {
    calls.push_back({call, ns, name, kind, object, kube::current_request_priority(),
                     kube::current_give_way_time()});
    if (journal != nullptr) journal->push_back(std::string(call) + " " + name);
  }
  kube::Result<Json> write(const char* call, const std::string& ns, const std::string& name,
                           const std::string& kind, const Json& object) {
    record(call, ns, name, kind, object);
    if (failing.count(call) > 0) return failure;
    Json answer = object;
    if (answer.is_object()) {
      answer["metadata"]["uid"] = "uid-made";
      answer["metadata"]["resourceVersion"] = std::to_string(++version_);
    }
    return answer;
  }
  // `settle`: an AlreadyExists answers the object there (CreatedOrFound).
  kube::Result<CreatedOrFound> create(const char* call, const std::string& ns,
                                      const std::string& kind, const Json& object, bool settle) {
    const std::string name = name_of(object);
    auto there = existing.find(name);
    if (there == existing.end()) {
      HB_TRY_ASSIGN(Json made, write(call, ns, name, kind, object));
      return CreatedOrFound{std::move(made), true};
    }
    record(call, ns, name, kind, object);
    if (!settle) {
      kube::Error e;
      e.kind = kube::ErrorKind::kAlreadyExists;
      e.code = 409;
      e.reason = "AlreadyExists";
      return e;
    }
    return CreatedOrFound{there->second, false};
  }

  int version_ = 300;
};

// The cache catching up with calls[from...]: what the operator's
// read-your-writes overlay would have shown the next pass (created and
// written runs, created Jobs, the Agent's status; deleted ones gone).
inline void cache_sees(FakeView& view, const FakeAgentApiWrites& writes, std::size_t from = 0) {
  auto run_named = [&](const std::string& name) -> Json* {
    for (Json& run : view.runs) {
      if (name_of(run) == name) return &run;
    }
    return nullptr;
  };
  int version = 900;
  for (std::size_t i = from; i < writes.calls.size(); ++i) {
    const WriteCall& c = writes.calls[i];
    Json* run = run_named(c.name);
    if (c.call == kCallCreateRun && run == nullptr) {
      view.runs.push_back(c.object);
      view.runs.back()["metadata"]["uid"] = "uid-made";  // as the create answered
    }
    if ((c.call == kCallPatchRunStatus || c.call == kCallLabelRun || c.call == kCallAdoptRun) &&
        run != nullptr) {
      run->merge_patch(c.object);
      (*run)["metadata"]["resourceVersion"] = std::to_string(++version);
    }
    if (c.call == kCallCreateJob) {
      Json job = c.object;
      project_job(job);
      view.jobs[c.name] = std::move(job);
    }
    if (c.call == kCallDeleteJob) view.jobs.erase(c.name);
    if (c.call == kCallHandOverJob && view.jobs.contains(c.name)) {
      view.jobs[c.name].merge_patch(c.object);
    }
    if (c.call == kCallReplaceAgentStatus) view.agents_by_name[c.name] = c.object;
    if (c.call == kCallDeleteRun)
      std::erase_if(view.runs, [&](const Json& r) { return name_of(r) == c.name; });
  }
}

}  // namespace hb::controllers::testing
