#include "controllers/model/pod_settings.h"

#include <algorithm>
#include <array>
#include <set>

#include "api/hb_assert.h"
#include "api/heartbeat_pod.h"
#include "api/object_names.h"
#include "controllers/model/names.h"

namespace hb::controllers {

namespace {

// Volume sources the restricted Pod Security Standard allows.
constexpr std::array<std::string_view, 8> kAllowedVolumeSources = {
    "configMap", "csi",   "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
    "projected", "secret"};
// Label and annotation prefixes that belong to the operator or Kubernetes.
constexpr std::array<std::string_view, 4> kReservedKeyPrefixes = {
    "heartbeat.dev/", "kubernetes.io/", "k8s.io/", "batch.kubernetes.io/"};
constexpr std::array<std::string_view, 2> kReservedLabels = {"job-name", "controller-uid"};
constexpr std::size_t kLabelNameBytesMax = 63;
static_assert(kLabelNameBytesMax == kLabelValueCharsMax,
              "a key's name part and a label value have the one DNS-label bound");

// The volumes and mount paths build_job uses (checked where they are
// returned: the caller compares a user's name or path with each anyway).
std::array<std::string_view, 7> operator_volumes() {
  const std::array<std::string_view, 7> volumes = {kContextVolume,
                                                   kTmpVolume,
                                                   api::kServiceAccountVolume,
                                                   api::kToolsSocketVolume,
                                                   api::kToolsWorkspaceVolume,
                                                   api::kToolsTmpVolume,
                                                   api::kArchivalVolume};
  HB_ASSERT(std::all_of(volumes.begin(), volumes.end(), api::is_dns1123_label));
  return volumes;
}

bool alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// A label value, or the name part of a qualified key.
bool label_name_ok(std::string_view s, bool allow_empty) {
  if (s.empty()) return allow_empty;
  if (s.size() > kLabelNameBytesMax || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool dns_subdomain_ok(std::string_view s) {
  return api::is_dns1123_subdomain(s);
}

bool qualified_key_ok(std::string_view key) {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return label_name_ok(key, false);
  return dns_subdomain_ok(key.substr(0, slash)) && label_name_ok(key.substr(slash + 1), false);
}

bool reserved_key(std::string_view key, bool label) {
  for (std::string_view prefix : kReservedKeyPrefixes) {
    if (key.substr(0, prefix.size()) == prefix) return true;
  }
  if (!label) return false;
  for (std::string_view reserved : kReservedLabels) {
    if (key == reserved) return true;
  }
  return false;
}

// p and q are the same place or one holds the other.
bool paths_overlap(std::string_view p, std::string_view q) {
  HB_ASSERT_MSG(!p.empty() && p.front() == '/' && !q.empty() && q.front() == '/',
                "both paths passed clean_absolute_path");
  auto under = [](std::string_view a, std::string_view b) {
    return a.size() > b.size() && a.substr(0, b.size()) == b && (b == "/" || a[b.size()] == '/');
  };
  return p == q || under(p, q) || under(q, p);
}

// Absolute, no empty, "." or ".." parts, no trailing slash.
bool clean_absolute_path(std::string_view path) {
  if (path.empty() || path.front() != '/') return false;
  if (path == "/") return true;
  std::size_t start = 1;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

std::array<std::string_view, 7> operator_paths() {
  const std::array<std::string_view, 7> paths = {kContextMountDir,
                                                 "/tmp",
                                                 api::kServiceAccountMountDir,
                                                 api::kToolsSocketDir,
                                                 api::kToolsWorkspaceDir,
                                                 kArchivalMountDir,
                                                 api::kTerminationPath};
  HB_ASSERT(std::all_of(paths.begin(), paths.end(), clean_absolute_path));
  return paths;
}

class Checker {
 public:
  Checker(const Json& runtime, std::string_view prefix) : runtime_(runtime), prefix_(prefix) {}

  std::vector<std::string> run() {
    if (!runtime_.is_object()) return errors_;
    check_pull_secrets();
    check_string_map("nodeSelector", true);
    check_string_map("podLabels", true);
    check_string_map("podAnnotations", false);
    check_tolerations();
    if (const Json* a = find_path(runtime_, "affinity"); a != nullptr && !a->is_object()) {
      fail("affinity", "must be an object (a Pod's affinity)");
    }
    if (const Json* p = find_path(runtime_, "priorityClassName");
        p != nullptr && (!p->is_string() || !dns_subdomain_ok(p->get<std::string>()))) {
      fail("priorityClassName", "must name a PriorityClass (a DNS subdomain)");
    }
    check_volumes();
    check_mounts("volumeMounts");
    check_mounts("tools.volumeMounts");
    return std::move(errors_);
  }

 private:
  void fail(const std::string& field, const std::string& what) {
    HB_ASSERT_MSG(!field.empty() && !what.empty(), "an error names a field and what is wrong");
    errors_.push_back(std::string(prefix_) + "." + field + ": " + what);
  }

  const Json* array_field(const std::string& field) {
    HB_ASSERT_MSG(field == "tools.volumeMounts" || field.find('.') == std::string::npos,
                  "only tools.volumeMounts is nested: another dotted field would read as one key");
    const Json* list = find_path(
        runtime_, field == "tools.volumeMounts" ? "tools/volumeMounts" : std::string_view(field));
    if (list == nullptr) return nullptr;
    if (!list->is_array()) {
      fail(field, "must be a list");
      return nullptr;
    }
    return list;
  }

  void check_pull_secrets() {
    const Json* list = array_field("imagePullSecrets");
    if (list == nullptr) return;
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (!dns_subdomain_ok(string_at((*list)[i], "name"))) {
        fail("imagePullSecrets[" + std::to_string(i) + "].name",
             "must name a Secret of the Agent's namespace");
      }
    }
  }

  void check_string_map(const char* field, bool label) {
    const Json* map = find_path(runtime_, field);
    if (map == nullptr) return;
    if (!map->is_object()) return fail(field, "must be a map of strings");
    std::size_t bytes = 0;
    for (auto it = map->begin(); it != map->end(); ++it) {
      const std::string where = std::string(field) + "[\"" + it.key() + "\"]";
      if (!it.value().is_string()) {
        fail(where, "must be a string");
        continue;
      }
      const std::string value = it.value().get<std::string>();
      bytes += it.key().size() + value.size();
      if (!qualified_key_ok(it.key())) {
        fail(where, "is not a valid key ([prefix/]name, name 63 characters at most)");
      } else if (reserved_key(it.key(), label) && std::string_view(field) != "nodeSelector") {
        fail(where, "is the operator's or Kubernetes' key; choose another");
      } else if (label && !label_name_ok(value, true)) {
        fail(where, "value \"" + api::quote_untrusted(value) +
                        "\" is not a valid label value (63 characters at most)");
      }
    }
    if (!label && bytes > kPodAnnotationsBytesMax) {
      fail(field, "hold " + std::to_string(bytes) + " bytes, more than " +
                      std::to_string(kPodAnnotationsBytesMax));
    }
  }

  void check_tolerations() {
    const Json* list = array_field("tolerations");
    if (list == nullptr) return;
    for (std::size_t i = 0; i < list->size(); ++i) {
      const Json& t = (*list)[i];
      const std::string where = "tolerations[" + std::to_string(i) + "]";
      const std::string op = string_at(t, "operator", "Equal");
      const std::string effect = string_at(t, "effect");
      if (op != "Equal" && op != "Exists") fail(where + ".operator", "must be Equal or Exists");
      if (op == "Exists" && !string_at(t, "value").empty()) {
        fail(where + ".value", "must be empty when the operator is Exists");
      }
      if (!effect.empty() && effect != "NoSchedule" && effect != "PreferNoSchedule" &&
          effect != "NoExecute") {
        fail(where + ".effect", "must be NoSchedule, PreferNoSchedule or NoExecute");
      }
      if (find_path(t, "tolerationSeconds") != nullptr && effect != "NoExecute") {
        fail(where + ".tolerationSeconds", "applies only with effect NoExecute");
      }
    }
  }

  void check_volumes() {
    const Json* list = array_field("volumes");
    if (list == nullptr) return;
    if (list->size() > kExtraVolumesMax) {
      fail("volumes", "at most " + std::to_string(kExtraVolumesMax) + " extra volumes");
    }
    for (std::size_t i = 0; i < list->size(); ++i) check_volume((*list)[i], i);
  }

  void check_volume(const Json& v, std::size_t i) {
    const std::string where = "volumes[" + std::to_string(i) + "]";
    const std::string name = string_at(v, "name");
    if (!api::is_dns1123_label(name)) return fail(where + ".name", "must be a DNS label");
    for (std::string_view ours : operator_volumes()) {
      if (name == ours) return fail(where + ".name", "\"" + name + "\" is the operator's volume");
    }
    if (!volumes_.insert(name).second) return fail(where + ".name", "\"" + name + "\" is repeated");
    int sources = 0;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it.key() == "name") continue;
      ++sources;
      bool allowed = false;
      for (std::string_view source : kAllowedVolumeSources) allowed |= it.key() == source;
      if (!allowed) {
        fail(where + "." + it.key(),
             "is not allowed under the restricted Pod Security Standard; use configMap, csi, "
             "downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected or secret");
      }
    }
    if (sources != 1) fail(where, "must have exactly one volume source");
    check_no_token(v, where);
  }

  // A projected ServiceAccount token is the runner's alone: mounted in the
  // tools container it would let the agent forge beats and usage reports.
  void check_no_token(const Json& v, const std::string& where) {
    const Json* sources = find_path(v, "projected/sources");
    if (sources == nullptr || !sources->is_array()) return;
    for (std::size_t j = 0; j < sources->size(); ++j) {
      if ((*sources)[j].is_object() && (*sources)[j].contains("serviceAccountToken")) {
        fail(where + ".projected.sources[" + std::to_string(j) + "].serviceAccountToken",
             "is not allowed: the Pod's ServiceAccount token reaches the runner container only");
      }
    }
  }

  void check_mounts(const std::string& field) {
    const Json* list = array_field(field);
    if (list == nullptr) return;
    std::set<std::string> paths;
    for (std::size_t i = 0; i < list->size(); ++i) {
      const Json& m = (*list)[i];
      const std::string where = field + "[" + std::to_string(i) + "]";
      const std::string name = string_at(m, "name");
      const std::string path = string_at(m, "mountPath");
      if (volumes_.count(name) == 0) {
        fail(where + ".name", "\"" + name + "\" is not in " + std::string(prefix_) +
                                  ".volumes (only those volumes may be mounted)");
      }
      if (!clean_absolute_path(path)) {
        fail(where + ".mountPath", "must be an absolute path without \".\" or \"..\" parts");
        continue;
      }
      for (std::string_view ours : operator_paths()) {
        if (paths_overlap(path, ours)) {
          fail(where + ".mountPath",
               "\"" + path + "\" overlaps the operator's " + std::string(ours));
        }
      }
      if (!paths.insert(path).second) fail(where + ".mountPath", "\"" + path + "\" is repeated");
      const std::string sub = string_at(m, "subPath");
      if (!sub.empty() && (sub.front() == '/' || sub == ".." || sub.rfind("../", 0) == 0 ||
                           sub.find("/../") != std::string::npos ||
                           (sub.size() >= 3 && sub.substr(sub.size() - 3) == "/.."))) {
        fail(where + ".subPath", "must be a relative path inside the volume");
      }
    }
  }

  const Json& runtime_;
  std::string_view prefix_;
  std::vector<std::string> errors_;
  std::set<std::string> volumes_;
};

}  // namespace

std::vector<std::string> check_pod_settings(const Json& runtime, std::string_view prefix) {
  return Checker(runtime, prefix).run();
}

Json effective_pod_settings(const Json& runtime, const Json& defaults) {
  Json out = Json::object();
  for (const char* field : kPodDefaultFields) {
    const Json* own = runtime.is_object() ? find_path(runtime, field) : nullptr;
    const Json* fleet = defaults.is_object() ? find_path(defaults, field) : nullptr;
    const std::string_view name = field;
    if ((name == "podLabels" || name == "podAnnotations") && fleet != nullptr &&
        fleet->is_object()) {
      Json merged = *fleet;
      if (own != nullptr && own->is_object()) merged.update(*own);
      out[field] = std::move(merged);
    } else if (own != nullptr) {
      out[field] = *own;
    } else if (fleet != nullptr) {
      out[field] = *fleet;
    }
  }
  for (const char* field : {"volumes", "volumeMounts"}) {
    if (const Json* own = runtime.is_object() ? find_path(runtime, field) : nullptr) {
      out[field] = *own;
    }
  }
  if (const Json* tools =
          runtime.is_object() ? find_path(runtime, "tools/volumeMounts") : nullptr) {
    out["toolsVolumeMounts"] = *tools;
  }
  return out;
}

void apply_pod_settings(const Json& settings, Json& template_metadata, Json& pod_spec) {
  for (const char* field :
       {"imagePullSecrets", "nodeSelector", "tolerations", "affinity", "priorityClassName"}) {
    if (const Json* value = find_path(settings, field); value != nullptr && !value->empty()) {
      pod_spec[field] = *value;
    }
  }
  // The operator's labels and annotations win over any the user set.
  auto merge_under = [](Json& ours, const Json* user) {
    if (user == nullptr || !user->is_object()) return;
    Json merged = *user;
    merged.update(ours);
    ours = std::move(merged);
  };
  merge_under(template_metadata["labels"], find_path(settings, "podLabels"));
  merge_under(template_metadata["annotations"], find_path(settings, "podAnnotations"));
  if (const Json* volumes = find_path(settings, "volumes"); volumes != nullptr) {
    for (const Json& v : *volumes) pod_spec["volumes"].push_back(v);
  }
  Json& containers = pod_spec["containers"];
  auto mount_into = [&](std::size_t index, const char* field) {
    const Json* mounts = find_path(settings, field);
    if (mounts == nullptr || index >= containers.size()) return;
    for (const Json& m : *mounts) containers[index]["volumeMounts"].push_back(m);
  };
  mount_into(0, "volumeMounts");
  mount_into(1, "toolsVolumeMounts");
  HB_ASSERT_MSG(containers.empty() || string_at(containers[0], "name") == api::kRunnerContainerName,
                "the Agent's settings never displace the runner container");
}

}  // namespace hb::controllers
