#include "tests/e2e/local_kubelet/launch_plan.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "kube/kubeconfig.h"

namespace hb::local_kubelet {
namespace {

// Thrown inside the planner, turned into a PlanResult at the top.
struct Problem {
  PlanProblem problem;
};

[[noreturn]] void wait_for(const std::string& reason, const std::string& message) {
  throw Problem{{false, reason, message}};
}
[[noreturn]] void fail(const std::string& reason, const std::string& message) {
  throw Problem{{true, reason, message}};
}

constexpr const char* kReasonConfigError = "CreateContainerConfigError";
constexpr const char* kReasonCreating = "ContainerCreating";
constexpr const char* kReasonUnsupported = "UnsupportedByLocalKubelet";

std::string str(const Json& object, const char* key, const std::string& fallback = "") {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool flag(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

const Json& member(const Json& object, const char* key) {
  static const Json kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

int mode_of(const Json& object, const char* key, int fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int>() : fallback;
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

class EnvList {
 public:
  void set(const std::string& name, const std::string& value) {
    for (auto& entry : vars_) {
      if (entry.first == name) {
        entry.second = value;
        return;
      }
    }
    vars_.emplace_back(name, value);
  }
  const std::vector<std::pair<std::string, std::string>>& vars() const { return vars_; }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

// The data of a ConfigMap (data + binaryData) or a Secret (data, base64), by key.
std::map<std::string, std::string> data_of(const Json& object, bool secret,
                                           const std::string& what) {
  std::map<std::string, std::string> out;
  const Json& data = member(object, "data");
  if (data.is_object()) {
    for (auto it = data.begin(); it != data.end(); ++it) {
      if (!it->is_string()) continue;
      if (!secret) {
        out[it.key()] = it->get<std::string>();
        continue;
      }
      try {
        out[it.key()] = kube::base64_decode(it->get<std::string>());
      } catch (const std::exception&) {
        fail(kReasonConfigError, what + ": key " + it.key() + " is not valid base64");
      }
    }
  }
  const Json& binary = member(object, "binaryData");
  if (!secret && binary.is_object()) {
    for (auto it = binary.begin(); it != binary.end(); ++it) {
      if (it->is_string()) out[it.key()] = kube::base64_decode(it->get<std::string>());
    }
  }
  return out;
}

std::string quoted_map(const Json& map) {
  std::string out;
  if (!map.is_object()) return out;
  for (auto it = map.begin(); it != map.end(); ++it) {  // nlohmann keeps keys sorted
    out += it.key() + "=" + Json(it->is_string() ? it->get<std::string>() : "").dump() + "\n";
  }
  return out;
}

// metadata.annotations['key'] -> "key" when path has that prefix.
std::optional<std::string> subscript(const std::string& path, const std::string& prefix) {
  const std::string open = prefix + "['";
  if (path.rfind(open, 0) != 0 || path.size() < open.size() + 2 ||
      path.compare(path.size() - 2, 2, "']") != 0) {
    return std::nullopt;
  }
  return path.substr(open.size(), path.size() - open.size() - 2);
}

std::string field_value(const Json& pod, const std::string& path, const std::string& node_name) {
  const Json& metadata = member(pod, "metadata");
  const Json& spec = member(pod, "spec");
  if (path == "metadata.name") return str(metadata, "name");
  if (path == "metadata.namespace") return str(metadata, "namespace");
  if (path == "metadata.uid") return str(metadata, "uid");
  if (path == "metadata.labels") return quoted_map(member(metadata, "labels"));
  if (path == "metadata.annotations") return quoted_map(member(metadata, "annotations"));
  if (path == "spec.nodeName") return node_name;
  if (path == "spec.serviceAccountName") return str(spec, "serviceAccountName");
  if (path == "status.podIP" || path == "status.hostIP" || path == "status.podIPs") return kPodIp;
  for (const char* map : {"metadata.labels", "metadata.annotations"}) {
    if (auto key = subscript(path, map)) {
      const Json& values =
          member(metadata, std::string(map) == "metadata.labels" ? "labels" : "annotations");
      return values.is_object() ? str(values, key->c_str()) : "";
    }
  }
  fail(kReasonUnsupported, "fieldRef " + path + " is not supported by hb-local-kubelet");
}

std::string join_path(const std::string& dir, const std::string& relative) {
  return relative.empty() ? dir : dir + "/" + relative;
}

std::string parent_of(const std::string& path) {
  return path.substr(0, path.find_last_of('/'));
}

class Planner {
 public:
  Planner(const Json& pod, const PlanInputs& in) : pod_(pod), in_(in) {}

  LocalLaunch plan() {
    const Json& spec = member(pod_, "spec");
    const Json& containers = member(spec, "containers");
    if (!containers.is_array() || containers.size() != 1) {
      fail(kReasonUnsupported, "hb-local-kubelet runs single-container Pods only; this one has " +
                                   std::to_string(containers.is_array() ? containers.size() : 0) +
                                   " containers");
    }
    if (member(spec, "initContainers").is_array() && !member(spec, "initContainers").empty()) {
      fail(kReasonUnsupported, "hb-local-kubelet does not run initContainers");
    }
    const Json& c = containers[0];
    out_.image = str(c, "image");
    auto binary = in_.images->binary_for(out_.image);
    if (!binary) {
      wait_for("ErrImagePull", "hb-local-kubelet: image \"" + out_.image +
                                   "\" is not mapped to a local binary; start hb-local-kubelet "
                                   "with --image=PREFIX=/path/to/binary for it");
    }
    const std::string restart = str(spec, "restartPolicy", "Always");
    if (restart != "Never") {
      out_.notes.push_back("restartPolicy " + restart + " is treated as Never");
    }
    out_.log_path = in_.pod_dir + "/container.log";
    const std::string work = in_.pod_dir + "/work";
    out_.dirs.push_back(work);

    volumes(member(spec, "volumes"));
    mounts(c);
    environment(c, work);

    // Command: the image's entrypoint is the mapped binary.
    std::vector<std::string> command, args;
    for (const char* key : {"command", "args"}) {
      const Json& list = member(c, key);
      if (!list.is_array()) continue;
      for (const Json& part : list) {
        std::string text =
            rewrite_path(expand_references(part.get<std::string>(), env_.vars()), out_.rewrites);
        (std::string(key) == "command" ? command : args).push_back(std::move(text));
      }
    }
    if (command.empty()) {
      out_.argv.push_back(*binary);
    } else {
      out_.argv.push_back(program_for(command[0], *binary));
      out_.argv.insert(out_.argv.end(), command.begin() + 1, command.end());
    }
    out_.argv.insert(out_.argv.end(), args.begin(), args.end());

    out_.working_dir = work;
    if (std::string wd = str(c, "workingDir"); !wd.empty()) {
      std::string local = rewrite_path(wd, out_.rewrites);
      out_.working_dir = local != wd ? local : work + wd;
      if (local == wd) out_.dirs.push_back(out_.working_dir);
    }
    out_.env = env_.vars();
    return std::move(out_);
  }

 private:
  std::optional<Json> lookup(bool secret, const std::string& name) {
    return secret ? in_.secret(name) : in_.config_map(name);
  }

  // Writes the keys of a ConfigMap or Secret (all, or `items`) into dir.
  void project(const std::map<std::string, std::string>& data, const Json& items, bool optional,
               int default_mode, const std::string& dir, const std::string& what) {
    if (!items.is_array()) {
      for (const auto& [key, value] : data)
        out_.files.push_back({dir + "/" + key, value, default_mode});
      return;
    }
    for (const Json& item : items) {
      const std::string key = str(item, "key"), path = str(item, "path");
      auto it = data.find(key);
      if (it == data.end()) {
        if (optional) continue;
        wait_for(kReasonCreating, "MountVolume.SetUp failed: " + what + " has no key " + key);
      }
      const std::string file = dir + "/" + path;
      if (path.find('/') != std::string::npos) out_.dirs.push_back(parent_of(file));
      out_.files.push_back({file, it->second, mode_of(item, "mode", default_mode)});
    }
  }

  void object_source(const Json& source, bool secret, int default_mode, const std::string& dir,
                     const std::string& volume) {
    const std::string name = str(source, secret ? "secretName" : "name");
    const std::string kind = secret ? "secret" : "configmap";
    const std::string what = kind + " \"" + name + "\"";
    const bool optional = flag(source, "optional");
    auto object = lookup(secret, name);
    if (!object) {
      if (optional) return;
      wait_for(kReasonCreating,
               "MountVolume.SetUp failed for volume \"" + volume + "\": " + what + " not found");
    }
    project(data_of(*object, secret, what), member(source, "items"), optional,
            mode_of(source, "defaultMode", default_mode), dir, what);
  }

  void downward_source(const Json& source, int default_mode, const std::string& dir) {
    const Json& items = member(source, "items");
    if (!items.is_array()) return;
    for (const Json& item : items) {
      const Json& ref = member(item, "fieldRef");
      if (!ref.is_object()) {
        fail(kReasonUnsupported, "downwardAPI item " + str(item, "path") +
                                     ": only fieldRef is supported by hb-local-kubelet");
      }
      const std::string file = dir + "/" + str(item, "path");
      if (str(item, "path").find('/') != std::string::npos) out_.dirs.push_back(parent_of(file));
      out_.files.push_back({file, field_value(pod_, str(ref, "fieldPath"), in_.node_name),
                            mode_of(item, "mode", default_mode)});
    }
  }

  void volumes(const Json& list) {
    if (!list.is_array()) return;
    for (const Json& v : list) {
      const std::string name = str(v, "name");
      const std::string dir = in_.pod_dir + "/volumes/" + name;
      volume_dirs_[name] = dir;
      out_.dirs.push_back(dir);
      if (v.contains("emptyDir")) continue;
      if (v.contains("configMap")) {
        object_source(v["configMap"], false, kDefaultFileMode, dir, name);
      } else if (v.contains("secret")) {
        object_source(v["secret"], true, kDefaultFileMode, dir, name);
      } else if (v.contains("downwardAPI")) {
        downward_source(v["downwardAPI"],
                        mode_of(v["downwardAPI"], "defaultMode", kDefaultFileMode), dir);
      } else if (v.contains("projected")) {
        const Json& projected = v["projected"];
        const int mode = mode_of(projected, "defaultMode", kDefaultFileMode);
        const Json& sources = member(projected, "sources");
        for (const Json& s : sources.is_array() ? sources : Json::array()) {
          if (s.contains("configMap")) {
            object_source(s["configMap"], false, mode, dir, name);
          } else if (s.contains("secret")) {
            Json source = s["secret"];
            source["secretName"] = str(source, "name");
            object_source(source, true, mode, dir, name);
          } else if (s.contains("downwardAPI")) {
            downward_source(s["downwardAPI"], mode, dir);
          } else if (s.contains("serviceAccountToken") && in_.service_account_token) {
            // The legacy token stands in for a bound one.
            out_.files.push_back({dir + "/" + str(s["serviceAccountToken"], "path", "token"),
                                  *in_.service_account_token, 0600});
          } else {
            fail(kReasonUnsupported, "volume \"" + name +
                                         "\": a projected source of this kind "
                                         "is not supported by hb-local-kubelet");
          }
        }
      } else {
        std::string type = "unknown";
        for (auto it = v.begin(); it != v.end(); ++it) {
          if (it.key() != "name") type = it.key();
        }
        fail(kReasonUnsupported,
             "volume \"" + name + "\": type " + type + " is not supported by hb-local-kubelet");
      }
    }
  }

  void mounts(const Json& c) {
    const Json& list = member(c, "volumeMounts");
    for (const Json& m : list.is_array() ? list : Json::array()) {
      const std::string name = str(m, "name");
      auto it = volume_dirs_.find(name);
      if (it == volume_dirs_.end()) {
        fail(kReasonConfigError, "volumeMount " + name + " names no volume of the Pod");
      }
      out_.rewrites.emplace_back(str(m, "mountPath"), join_path(it->second, str(m, "subPath")));
    }
    const std::string termination =
        str(c, "terminationMessagePath", kDefaultTerminationMessagePath);
    out_.termination_path = in_.pod_dir + "/termination-log";
    out_.files.push_back({out_.termination_path, "", kDefaultFileMode});
    out_.rewrites.emplace_back(termination, out_.termination_path);
    out_.termination_policy = str(c, "terminationMessagePolicy", "File");
    std::stable_sort(out_.rewrites.begin(), out_.rewrites.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }

  // A value from a ConfigMap or Secret key; nullopt when optional and missing.
  std::optional<std::string> key_ref(const Json& ref, bool secret, const std::string& var) {
    const std::string name = str(ref, "name"), key = str(ref, "key");
    const std::string what = std::string(secret ? "secret" : "configmap") + " \"" + name + "\"";
    const bool optional = flag(ref, "optional");
    auto object = lookup(secret, name);
    if (!object) {
      if (optional) return std::nullopt;
      wait_for(kReasonConfigError, "env " + var + ": " + what + " not found");
    }
    auto data = data_of(*object, secret, what);
    auto it = data.find(key);
    if (it == data.end()) {
      if (optional) return std::nullopt;
      wait_for(kReasonConfigError, "env " + var + ": couldn't find key " + key + " in " + what);
    }
    return it->second;
  }

  void environment(const Json& c, const std::string& work) {
    env_.set("PATH", kDefaultPath);
    env_.set("HOSTNAME", str(member(pod_, "metadata"), "name"));
    env_.set("HOME", work);
    for (const auto& [name, value] : in_.pass_env) env_.set(name, value);
    for (const auto& [container_path, local] : out_.rewrites) {
      if (container_path == "/tmp") env_.set("TMPDIR", local);
    }
    if (!in_.service_account_kubeconfig.empty()) {
      const std::string path = in_.pod_dir + "/kubeconfig";
      out_.files.push_back({path, in_.service_account_kubeconfig, 0600});
      env_.set("KUBECONFIG", path);
      env_.set("HEARTBEAT_KUBECONFIG", path);
    }
    const Json& env_from = member(c, "envFrom");
    for (const Json& source : env_from.is_array() ? env_from : Json::array()) {
      const bool secret = source.contains("secretRef");
      const Json& ref = member(source, secret ? "secretRef" : "configMapRef");
      const std::string name = str(ref, "name");
      auto object = lookup(secret, name);
      if (!object) {
        if (flag(ref, "optional")) continue;
        wait_for(kReasonConfigError, std::string("envFrom: ") + (secret ? "secret" : "configmap") +
                                         " \"" + name + "\" not found");
      }
      for (const auto& [key, value] : data_of(*object, secret, name)) {
        const std::string var = str(source, "prefix") + key;
        if (valid_env_name(var)) {
          env_.set(var, rewrite_path(value, out_.rewrites));
        } else {
          out_.notes.push_back("envFrom " + name + ": skipped key " + key +
                               " (not a variable name)");
        }
      }
    }
    const Json& env = member(c, "env");
    for (const Json& e : env.is_array() ? env : Json::array()) {
      const std::string name = str(e, "name");
      const Json& from = member(e, "valueFrom");
      std::optional<std::string> value;
      if (!from.is_object()) {
        value = expand_references(str(e, "value"), env_.vars());
      } else if (from.contains("secretKeyRef")) {
        value = key_ref(from["secretKeyRef"], true, name);
      } else if (from.contains("configMapKeyRef")) {
        value = key_ref(from["configMapKeyRef"], false, name);
      } else if (from.contains("fieldRef")) {
        value = field_value(pod_, str(from["fieldRef"], "fieldPath"), in_.node_name);
      } else {
        fail(kReasonUnsupported, "env " + name +
                                     ": this valueFrom (e.g. resourceFieldRef) is not supported by "
                                     "hb-local-kubelet");
      }
      if (value) env_.set(name, rewrite_path(*value, out_.rewrites));
    }
  }

  const Json& pod_;
  const PlanInputs& in_;
  LocalLaunch out_;
  EnvList env_;
  std::map<std::string, std::string> volume_dirs_;
};

}  // namespace

std::string wants_service_account(const Json& pod) {
  const Json& spec = member(pod, "spec");
  auto automount = spec.find("automountServiceAccountToken");
  if (automount != spec.end() && automount->is_boolean() && !automount->get<bool>()) return "";
  return str(spec, "serviceAccountName");
}

PlanResult plan_launch(const Json& pod, const PlanInputs& inputs) {
  if (inputs.images == nullptr) throw std::invalid_argument("plan_launch: no image map");
  try {
    return Planner(pod, inputs).plan();
  } catch (const Problem& p) {
    return p.problem;
  }
}

std::string expand_references(const std::string& text,
                              const std::vector<std::pair<std::string, std::string>>& vars) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i];
      continue;
    }
    if (text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (text[i + 1] == '(') {
      auto close = text.find(')', i + 2);
      if (close != std::string::npos) {
        const std::string name = text.substr(i + 2, close - i - 2);
        auto it = std::find_if(vars.rbegin(), vars.rend(),
                               [&](const auto& v) { return v.first == name; });
        if (it != vars.rend()) {
          out += it->second;
          i = close;
          continue;
        }
      }
    }
    out += text[i];
  }
  return out;
}

std::string rewrite_path(const std::string& value,
                         const std::vector<std::pair<std::string, std::string>>& rewrites) {
  auto one = [&](const std::string& v) -> std::optional<std::string> {
    for (const auto& [container_path, local] : rewrites) {
      if (container_path.empty() || container_path == "/") continue;
      if (v == container_path) return local;
      if (v.size() > container_path.size() &&
          v.compare(0, container_path.size(), container_path) == 0 &&
          v[container_path.size()] == '/') {
        return local + v.substr(container_path.size());
      }
    }
    return std::nullopt;
  };
  if (auto r = one(value)) return *r;
  if (value.rfind("-", 0) == 0) {
    if (auto eq = value.find('='); eq != std::string::npos) {
      if (auto r = one(value.substr(eq + 1))) return value.substr(0, eq + 1) + *r;
    }
  }
  return value;
}

std::string render_token_kubeconfig(const std::string& server, const std::string& ca_pem,
                                    bool insecure_skip_verify, const std::string& token,
                                    const std::string& namespace_) {
  std::string out = "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n";
  out += "    server: " + Json(server).dump() + "\n";
  if (!ca_pem.empty())
    out += "    certificate-authority-data: " + kube::base64_encode(ca_pem) + "\n";
  if (insecure_skip_verify) out += "    insecure-skip-tls-verify: true\n";
  out += "users:\n- name: service-account\n  user:\n    token: " + Json(token).dump() + "\n";
  out += "contexts:\n- name: local\n  context:\n    cluster: local\n    user: service-account\n";
  out += "    namespace: " + Json(namespace_).dump() + "\n";
  out += "current-context: local\n";
  return out;
}

}  // namespace hb::local_kubelet
