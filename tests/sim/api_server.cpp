#include "tests/sim/api_server.h"

#include <set>

#include "controllers/model/json_util.h"
#include "controllers/schedule/utc_time.h"

namespace hb::sim {

namespace {

// Status is written only through /status on these (as the real API server does).
bool has_status_subresource(const std::string& resource) {
  return resource == "agents" || resource == "heartbeatruns" || resource == "heartbeatpolicies" ||
         resource == "jobs" || resource == "pods";
}

using controllers::name_of;
using controllers::namespace_of;

std::string rv_of(const Json& o) {
  return o.value("/metadata/resourceVersion"_json_pointer, std::string());
}

Json labels_of(const Json& o) {
  const Json* labels = o.contains("metadata") && o["metadata"].contains("labels")
                           ? &o["metadata"]["labels"]
                           : nullptr;
  return labels != nullptr && labels->is_object() ? *labels : Json::object();
}

// The subresource write keeps everything but status; the main one keeps status.
Json merge_by_subresource(const Json& before, Json after, bool status_only,
                          const std::string& resource) {
  if (!has_status_subresource(resource)) return after;
  if (status_only) {
    Json kept = before;
    if (after.contains("status")) {
      kept["status"] = after["status"];
    } else {
      kept.erase("status");
    }
    return kept;
  }
  if (before.contains("status")) {
    after["status"] = before["status"];
  } else {
    after.erase("status");
  }
  return after;
}

}  // namespace

Answer status_answer(int code, const std::string& reason, const std::string& message) {
  return {code, Json{{"kind", "Status"},
                     {"apiVersion", "v1"},
                     {"status", "Failure"},
                     {"code", code},
                     {"reason", reason},
                     {"message", message}}};
}

LabelSelector::LabelSelector(const std::string& selector) {
  std::size_t begin = 0;
  while (begin <= selector.size()) {
    std::size_t end = selector.find(',', begin);
    if (end == std::string::npos) end = selector.size();
    const std::string term = selector.substr(begin, end - begin);
    begin = end + 1;
    if (term.empty()) continue;
    if (const auto ne = term.find("!="); ne != std::string::npos) {
      terms_.push_back({term.substr(0, ne), term.substr(ne + 2), Op::kNotEquals});
    } else if (const auto eq = term.find('='); eq != std::string::npos) {
      terms_.push_back({term.substr(0, eq), term.substr(eq + 1), Op::kEquals});
    } else {
      terms_.push_back({term, "", Op::kExists});
    }
  }
}

bool LabelSelector::matches(const Json& object) const {
  if (terms_.empty()) return true;
  static const Json kNoLabels = Json::object();
  const Json* labels = &kNoLabels;
  if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    if (auto l = meta->find("labels"); l != meta->end() && l->is_object()) labels = &*l;
  }
  for (const Term& t : terms_) {
    const auto found = labels->find(t.key);
    const bool present = found != labels->end();
    switch (t.op) {
      case Op::kEquals:
        if (!present || *found != t.value) return false;
        break;
      case Op::kNotEquals:
        if (present && *found == t.value) return false;
        break;
      case Op::kExists:
        if (!present) return false;
        break;
    }
  }
  return true;
}

Json* ApiServer::find(const std::string& resource, const std::string& ns, const std::string& name) {
  auto it = objects_.find(resource);
  if (it == objects_.end()) return nullptr;
  auto object = it->second.find(controllers::object_key(ns, name));
  return object == it->second.end() ? nullptr : &object->second;
}

const Json* ApiServer::find(const std::string& resource, const std::string& ns,
                            const std::string& name) const {
  return const_cast<ApiServer*>(this)->find(resource, ns, name);
}

void ApiServer::record(const std::string& resource, const std::string& type, const Json& object,
                       const Json* before) {
  std::optional<Json> labels_before;
  if (before != nullptr) labels_before = Json{{"metadata", {{"labels", labels_of(*before)}}}};
  changes_[resource].push(
      {rv_, namespace_of(object), type, object, std::move(labels_before), now_()});
  versions_[resource] = rv_;
}

void ChangeLog::forget_before(uint64_t position) {
  while (first_ < position && !entries_.empty()) {
    entries_.pop_front();
    ++first_;
  }
}

const ChangeLog& ApiServer::changes(const std::string& resource) const {
  static const ChangeLog kNone;
  auto it = changes_.find(resource);
  return it == changes_.end() ? kNone : it->second;
}

void ApiServer::forget_changes(const std::map<std::string, uint64_t>& keep_from) {
  for (auto& [resource, log] : changes_) {
    auto it = keep_from.find(resource);
    log.forget_before(it == keep_from.end() ? log.end() : it->second);
  }
}

Answer ApiServer::get(const std::string& resource, const std::string& ns,
                      const std::string& name) const {
  const Json* found = find(resource, ns, name);
  if (found == nullptr) {
    return status_answer(404, "NotFound", resource + " \"" + name + "\" not found");
  }
  return {200, *found};
}

Answer ApiServer::list(const std::string& resource, const std::string& ns,
                       const std::string& selector) const {
  const LabelSelector wanted(selector);
  Json items = Json::array();
  for_each(resource, [&](const Json& o) {
    if ((ns.empty() || namespace_of(o) == ns) && wanted.matches(o)) items.push_back(o);
  });
  return {200, Json{{"kind", "List"},
                    {"items", std::move(items)},
                    {"metadata", {{"resourceVersion", std::to_string(rv_)}}}}};
}

std::vector<Json> ApiServer::objects(const std::string& resource, const std::string& ns) const {
  std::vector<Json> out;
  for_each(resource, [&](const Json& o) {
    if (ns.empty() || namespace_of(o) == ns) out.push_back(o);
  });
  return out;
}

std::optional<Json> ApiServer::object(const std::string& resource, const std::string& ns,
                                      const std::string& name) const {
  const Json* found = find(resource, ns, name);
  if (found == nullptr) return std::nullopt;
  return *found;
}

Answer ApiServer::store(Actor actor, const std::string& resource, const std::optional<Json>& before,
                        Json after) {
  ++rv_;
  after["metadata"]["resourceVersion"] = std::to_string(rv_);
  if (before && before->contains("spec") && after.contains("spec") &&
      (*before)["spec"] != after["spec"]) {
    after["metadata"]["generation"] = (*before)["metadata"].value("generation", 1) + 1;
  }
  objects_[resource][controllers::object_key(after)] = after;
  record(resource, before ? "MODIFIED" : "ADDED", after, before ? &*before : nullptr);
  if (observer_) observer_(actor, resource, before, after);
  return {before ? 200 : 201, std::move(after)};
}

Answer ApiServer::create(Actor actor, const std::string& resource, const std::string& ns,
                         Json object) {
  Json& meta = object["metadata"];
  if (name_of(object).empty()) {
    const std::string prefix = meta.value("generateName", std::string());
    if (prefix.empty()) return status_answer(422, "Invalid", "metadata.name: Required value");
    meta["name"] = prefix + std::to_string(10000 + ++generated_names_);
  }
  meta["namespace"] = ns;
  if (find(resource, ns, name_of(object)) != nullptr) {
    return status_answer(409, "AlreadyExists",
                         resource + " \"" + name_of(object) + "\" already exists");
  }
  meta["uid"] = "uid-" + std::to_string(++uids_);
  meta["creationTimestamp"] = schedule::format_rfc3339(now_());
  meta["generation"] = 1;
  if (has_status_subresource(resource) && actor != Actor::kNode) object.erase("status");
  return store(actor, resource, std::nullopt, std::move(object));
}

Answer ApiServer::replace(Actor actor, const std::string& resource, const std::string& ns,
                          const std::string& name, Json object, bool status) {
  const Json* found = find(resource, ns, name);
  if (found == nullptr) return status_answer(404, "NotFound", name + " not found");
  const std::string want = rv_of(object);
  if (!want.empty() && want != rv_of(*found)) {
    return status_answer(409, "Conflict",
                         "Operation cannot be fulfilled on " + resource + " \"" + name +
                             "\": the object has been modified; please apply your changes to "
                             "the latest version and try again");
  }
  const Json before = *found;
  Json after = merge_by_subresource(before, std::move(object), status, resource);
  for (const char* fixed :
       {"uid", "creationTimestamp", "namespace", "name", "generation", "deletionTimestamp"}) {
    if (before["metadata"].contains(fixed)) after["metadata"][fixed] = before["metadata"][fixed];
  }
  return store(actor, resource, before, std::move(after));
}

Answer ApiServer::merge_patch(Actor actor, const std::string& resource, const std::string& ns,
                              const std::string& name, const Json& patch, bool status) {
  const Json* found = find(resource, ns, name);
  if (found == nullptr) return status_answer(404, "NotFound", name + " not found");
  Json merged = *found;
  merged.merge_patch(patch);
  if (!patch.contains("metadata") || !patch["metadata"].contains("resourceVersion")) {
    merged["metadata"]["resourceVersion"] = rv_of(*found);  // unconditional
  }
  return replace(actor, resource, ns, name, std::move(merged), status);
}

Answer ApiServer::remove(Actor actor, const std::string& resource, const std::string& ns,
                         const std::string& name, const Json& options) {
  const Json* found = find(resource, ns, name);
  if (found == nullptr) return status_answer(404, "NotFound", name + " not found");
  const Json pre = options.value("preconditions", Json::object());
  if ((pre.contains("uid") && pre["uid"] != (*found)["metadata"]["uid"]) ||
      (pre.contains("resourceVersion") && pre["resourceVersion"] != rv_of(*found))) {
    return status_answer(409, "Conflict", "precondition failed for " + name);
  }
  if (resource == "pods") {  // graceful: the kubelet stops it, then it goes
    if ((*found)["metadata"].contains("deletionTimestamp")) return {200, *found};
    Json after = *found;
    after["metadata"]["deletionTimestamp"] = schedule::format_rfc3339(now_());
    return store(actor, resource, *found, std::move(after));
  }
  return erase(actor, resource, *found);
}

Answer ApiServer::erase(Actor actor, const std::string& resource, const Json& object) {
  const Json gone = object;
  objects_[resource].erase(controllers::object_key(gone));
  removed_ = true;
  ++rv_;
  Json last = gone;
  last["metadata"]["resourceVersion"] = std::to_string(rv_);
  record(resource, "DELETED", last, nullptr);
  if (observer_) observer_(actor, resource, gone, std::nullopt);
  return {200, std::move(last)};
}

void ApiServer::node_update(const std::string& resource, Json object) {
  std::optional<Json> before;
  if (const Json* found = find(resource, namespace_of(object), name_of(object))) before = *found;
  store(Actor::kNode, resource, before, std::move(object));
}

void ApiServer::finalize_pod(const std::string& ns, const std::string& name) {
  if (const Json* found = find("pods", ns, name)) erase(Actor::kNode, "pods", *found);
}

bool ApiServer::uid_live(const std::string& uid) const {
  for (const auto& [resource, objects] : objects_) {
    for (const auto& [k, o] : objects) {
      if (o["metadata"].value("uid", std::string()) == uid) return true;
    }
  }
  return false;
}

void ApiServer::collect_garbage() {
  while (removed_) {  // a removal may orphan the next generation
    removed_ = false;
    std::set<std::string> live;
    for (const auto& [resource, objects] : objects_) {
      for (const auto& [k, o] : objects) live.insert(o["metadata"].value("uid", std::string()));
    }
    std::vector<std::pair<std::string, Json>> orphans;
    for (const auto& [resource, objects] : objects_) {
      for (const auto& [k, o] : objects) {
        auto owners = o["metadata"].find("ownerReferences");
        if (owners == o["metadata"].end() || owners->empty()) continue;
        bool any_live = false;
        for (const Json& ref : *owners) any_live |= live.count(ref.value("uid", std::string())) > 0;
        if (!any_live) orphans.emplace_back(resource, o);
      }
    }
    for (const auto& [resource, o] : orphans) {
      remove(Actor::kNode, resource, namespace_of(o), name_of(o), Json::object());
    }
  }
}

}  // namespace hb::sim
