#include "tools/local_kubelet/launch_plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "kube/kubeconfig.h"

namespace hb::local_kubelet {
namespace {

// Thrown inside the planner, turned into a PlanResult at the top.
struct Problem {
  PlanProblem problem;
};

[[noreturn]] void wait_for(const std::string& reason, const std::string& message,
                           const std::string& container = "") {
  throw Problem{{false, container, reason, message}};
}
[[noreturn]] void fail(const std::string& reason, const std::string& message,
                       const std::string& container = "") {
  throw Problem{{true, container, reason, message}};
}

constexpr const char* kReasonConfigError = "CreateContainerConfigError";
constexpr const char* kReasonCreating = "ContainerCreating";
constexpr const char* kReasonUnsupported = "UnsupportedByLocalKubelet";
// Published into every namespace by the root-CA publisher, which a local
// control plane may not run; the executor's own CA stands in for it.
constexpr const char* kRootCaConfigMap = "kube-root-ca.crt";
constexpr const char* kRootCaKey = "ca.crt";
// DNS labels, as the API server validates container and volume names.
constexpr std::size_t kNameBytesMax = 63;
// Linux ids: 32 bits, and (uid_t)-1 means "unchanged" to setuid.
constexpr int64_t kIdMax = std::numeric_limits<uint32_t>::max() - 1;

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
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

const Json& list_of(const Json& object, const char* key) {
  static const Json kEmpty = Json::array();
  const Json& list = member(object, key);
  return list.is_array() ? list : kEmpty;
}

int mode_of(const Json& object, const char* key, int fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int>() : fallback;
}

std::optional<int64_t> int_of(const Json& object, const char* key) {
  const Json& value = member(object, key);
  if (!value.is_number_integer()) return std::nullopt;
  return value.get<int64_t>();
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

// Container and volume names become path components.
bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > kNameBytesMax) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '-';
  });
}

bool has_token_source(const Json& volume) {
  for (const Json& source : list_of(member(volume, "projected"), "sources")) {
    if (source.contains("serviceAccountToken")) return true;
  }
  return false;
}

// The legacy automount: the admission plugin mounted a token volume into
// every container, and every container gets a kubeconfig.
bool automounts(const Json& spec) {
  auto automount = spec.find("automountServiceAccountToken");
  if (automount != spec.end() && automount->is_boolean() && !automount->get<bool>()) return false;
  return !str(spec, "serviceAccountName").empty();
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
      kube::Result<std::string> decoded = kube::base64_decode(it->get<std::string>());
      if (!decoded.ok()) {
        fail(kReasonConfigError, what + ": key " + it.key() + " is not valid base64");
      }
      out[it.key()] = std::move(decoded).value();
    }
  }
  const Json& binary = member(object, "binaryData");
  if (!secret && binary.is_object()) {
    for (auto it = binary.begin(); it != binary.end(); ++it) {
      if (!it->is_string()) continue;
      kube::Result<std::string> decoded = kube::base64_decode(it->get<std::string>());
      if (!decoded.ok()) {
        fail(kReasonConfigError, what + ": binaryData key " + it.key() + " is not valid base64");
      }
      out[it.key()] = std::move(decoded).value();
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

// How a volume's directory and files are owned: by the one user that mounts
// it (0700), else by the Pod's fsGroup (2770), else open as Kubernetes makes it.
struct VolumeAccess {
  Owner owner;
  int dir_mode = kPrivateDirMode;
  int file_bits = 0;  // or-ed into each file's mode
};

VolumeAccess volume_access(const std::vector<RunAs>& mounters, std::optional<int64_t> fs_group,
                           bool empty_dir) {
  if (mounters.empty()) return {};
  const Owner first = mounters.front().owner();
  const bool one_user = std::all_of(mounters.begin(), mounters.end(),
                                    [&](const RunAs& r) { return r.owner().uid == first.uid; });
  if (one_user) return {first, kPrivateDirMode, 0};
  if (fs_group) return {{-1, *fs_group}, kSharedDirMode, kSharedFileReadBits};
  return {{}, empty_dir ? kOpenEmptyDirMode : kOpenContentDirMode, 0};
}

// A path below a volume or work dir, from the Pod spec: no way out of it.
bool escapes(const std::string& relative) {
  std::size_t start = 0;
  while (start <= relative.size()) {
    std::size_t slash = relative.find('/', start);
    if (slash == std::string::npos) slash = relative.size();
    if (relative.compare(start, slash - start, "..") == 0 && slash - start == 2) return true;
    start = slash + 1;
  }
  return false;
}

class Planner {
 public:
  Planner(const Json& pod, const PlanInputs& in)
      : pod_(pod), in_(in), spec_(member(pod, "spec")), automount_(automounts(spec_)) {}

  LocalLaunch plan() {
    const Json& containers = check_containers();
    identities(containers);
    const std::string restart = str(spec_, "restartPolicy", "Always");
    if (restart != "Never") {
      out_.notes.push_back("restartPolicy " + restart + " is treated as Never");
    }
    for (const char* sub : {"", "/containers", "/volumes"}) {
      out_.dirs.push_back({in_.pod_dir + sub, kTraverseOnlyDirMode, {}});
    }
    volumes(containers);
    for (std::size_t i = 0; i < containers.size(); ++i) {
      out_.containers.push_back(container(containers[i], run_as_[i]));
    }
    return std::move(out_);
  }

 private:
  struct Volume {
    std::string dir;
    VolumeAccess access;
    bool token = false;  // has a serviceAccountToken source
  };

  const Json& check_containers() {
    const Json& containers = list_of(spec_, "containers");
    if (containers.empty()) fail(kReasonUnsupported, "the Pod has no containers");
    if (!list_of(spec_, "initContainers").empty()) {
      fail(kReasonUnsupported, "hb-local-kubelet does not run initContainers (nor sidecars)");
    }
    std::set<std::string> names;
    for (const Json& c : containers) {
      const std::string name = str(c, "name");
      if (!valid_name(name) || !names.insert(name).second) {
        fail(kReasonConfigError, "container name \"" + name + "\" is not a unique DNS label");
      }
    }
    return containers;
  }

  void identities(const Json& containers) {
    const Json& pod_security = member(spec_, "securityContext");
    for (const Json& c : containers) {
      const std::string name = str(c, "name");
      const Json& security = member(c, "securityContext");
      RunAs r = run_as_for(pod_security, security);
      std::vector<int64_t> ids = r.groups;
      if (r.uid) ids.insert(ids.end(), {*r.uid, r.gid});
      for (int64_t id : ids) {
        if (id < 0 || id > kIdMax) {
          fail(kReasonConfigError, "user or group id " + std::to_string(id) + " is out of range",
               name);
        }
      }
      const Json& non_root = security.contains("runAsNonRoot") ? security : pod_security;
      if (flag(non_root, "runAsNonRoot") && r.uid && *r.uid == 0) {
        fail(kReasonConfigError, "container's runAsUser breaks non-root policy", name);
      }
      if (flag(non_root, "runAsNonRoot") && !r.uid) {
        out_.notes.push_back(
            "container " + name +
            ": runAsNonRoot without runAsUser; it runs as hb-local-kubelet's user");
      }
      run_as_.push_back(std::move(r));
    }
  }

  // Creates each directory of `relative` below base (which exists); returns the last.
  std::string dirs_below(const std::string& base, const std::string& relative, int mode,
                         Owner owner) {
    if (escapes(relative)) fail(kReasonConfigError, "path \"" + relative + "\" leaves its volume");
    std::string path = base;
    std::size_t start = 0;
    while (start < relative.size()) {
      std::size_t slash = relative.find('/', start);
      if (slash == std::string::npos) slash = relative.size();
      if (slash > start && relative.compare(start, slash - start, ".") != 0) {
        path += "/" + relative.substr(start, slash - start);
        const bool known = std::any_of(out_.dirs.begin(), out_.dirs.end(),
                                       [&](const DirToMake& d) { return d.path == path; });
        if (!known) out_.dirs.push_back({path, mode, owner});
      }
      start = slash + 1;
    }
    return path;
  }

  void add_file(const Volume& v, const std::string& relative, std::string content, int mode) {
    const auto slash = relative.find_last_of('/');
    if (slash != std::string::npos) {
      dirs_below(v.dir, relative.substr(0, slash), v.access.dir_mode, v.access.owner);
    }
    if (escapes(relative)) fail(kReasonConfigError, "path \"" + relative + "\" leaves its volume");
    out_.files.push_back(
        {v.dir + "/" + relative, std::move(content), mode | v.access.file_bits, v.access.owner});
  }

  std::optional<Json> lookup(bool secret, const std::string& name) {
    return secret ? in_.secret(name) : in_.config_map(name);
  }

  // Writes the keys of a ConfigMap or Secret (all, or `items`) into the volume.
  void project(const std::map<std::string, std::string>& data, const Json& items, bool optional,
               int default_mode, const Volume& v, const std::string& what) {
    if (!items.is_array()) {
      for (const auto& [key, value] : data) add_file(v, key, value, default_mode);
      return;
    }
    for (const Json& item : items) {
      const std::string key = str(item, "key");
      auto it = data.find(key);
      if (it == data.end()) {
        if (optional) continue;
        wait_for(kReasonCreating, "MountVolume.SetUp failed: " + what + " has no key " + key);
      }
      add_file(v, str(item, "path"), it->second, mode_of(item, "mode", default_mode));
    }
  }

  void object_source(const Json& source, bool secret, int default_mode, const Volume& v,
                     const std::string& volume) {
    const std::string name = str(source, secret ? "secretName" : "name");
    const std::string what = std::string(secret ? "secret" : "configmap") + " \"" + name + "\"";
    const bool optional = flag(source, "optional");
    auto object = lookup(secret, name);
    if (!object && !secret && name == kRootCaConfigMap) {
      object = Json{{"data", {{kRootCaKey, in_.cluster_ca_pem}}}};
      out_.notes.push_back("volume " + volume + ": configmap " + kRootCaConfigMap +
                           " does not exist; ca.crt is hb-local-kubelet's own CA");
    }
    if (!object) {
      if (optional) return;
      wait_for(kReasonCreating,
               "MountVolume.SetUp failed for volume \"" + volume + "\": " + what + " not found");
    }
    project(data_of(*object, secret, what), member(source, "items"), optional,
            mode_of(source, "defaultMode", default_mode), v, what);
  }

  void downward_source(const Json& source, int default_mode, const Volume& v) {
    for (const Json& item : list_of(source, "items")) {
      const Json& ref = member(item, "fieldRef");
      if (!ref.is_object()) {
        fail(kReasonUnsupported, "downwardAPI item " + str(item, "path") +
                                     ": only fieldRef is supported by hb-local-kubelet");
      }
      add_file(v, str(item, "path"), field_value(pod_, str(ref, "fieldPath"), in_.node_name),
               mode_of(item, "mode", default_mode));
    }
  }

  void projected(const Json& projected, const Volume& v, const std::string& name) {
    const int mode = mode_of(projected, "defaultMode", kDefaultFileMode);
    for (const Json& s : list_of(projected, "sources")) {
      if (s.contains("configMap")) {
        object_source(s["configMap"], false, mode, v, name);
      } else if (s.contains("secret")) {
        Json source = s["secret"];
        source["secretName"] = str(source, "name");
        object_source(source, true, mode, v, name);
      } else if (s.contains("downwardAPI")) {
        downward_source(s["downwardAPI"], mode, v);
      } else if (s.contains("serviceAccountToken")) {
        if (!in_.service_account_token) {
          wait_for(kReasonCreating, "MountVolume.SetUp failed for volume \"" + name +
                                        "\": no service account token yet");
        }
        // The legacy token stands in for a bound one: audience and
        // expirationSeconds are not honoured.
        add_file(v, str(s["serviceAccountToken"], "path", "token"), *in_.service_account_token,
                 kPrivateFileMode);
      } else {
        fail(kReasonUnsupported, "volume \"" + name +
                                     "\": a projected source of this kind "
                                     "is not supported by hb-local-kubelet");
      }
    }
  }

  void content(const Json& v, const Volume& volume, const std::string& name) {
    if (v.contains("emptyDir")) return;
    if (v.contains("configMap")) {
      object_source(v["configMap"], false, kDefaultFileMode, volume, name);
    } else if (v.contains("secret")) {
      object_source(v["secret"], true, kDefaultFileMode, volume, name);
    } else if (v.contains("downwardAPI")) {
      downward_source(v["downwardAPI"], mode_of(v["downwardAPI"], "defaultMode", kDefaultFileMode),
                      volume);
    } else if (v.contains("projected")) {
      projected(v["projected"], volume, name);
    } else {
      std::string type = "unknown";
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (it.key() != "name") type = it.key();
      }
      fail(kReasonUnsupported,
           "volume \"" + name + "\": type " + type + " is not supported by hb-local-kubelet");
    }
  }

  void volumes(const Json& containers) {
    std::map<std::string, std::vector<RunAs>> mounters;
    for (std::size_t i = 0; i < containers.size(); ++i) {
      std::set<std::string> seen;
      for (const Json& m : list_of(containers[i], "volumeMounts")) {
        if (seen.insert(str(m, "name")).second) mounters[str(m, "name")].push_back(run_as_[i]);
      }
    }
    const auto fs_group = int_of(member(spec_, "securityContext"), "fsGroup");
    for (const Json& v : list_of(spec_, "volumes")) {
      const std::string name = str(v, "name");
      if (!valid_name(name) || volumes_.count(name) != 0) {
        fail(kReasonConfigError, "volume name \"" + name + "\" is not a unique DNS label");
      }
      const auto& users = mounters[name];
      Volume& volume = volumes_[name];
      volume = {in_.pod_dir + "/volumes/" + name,
                volume_access(users, fs_group, v.contains("emptyDir")), has_token_source(v)};
      out_.dirs.push_back({volume.dir, volume.access.dir_mode, volume.access.owner});
      if (users.size() > 1 && volume.dir.size() + kSocketNameRoomBytes > kUnixSocketPathBytesMax) {
        out_.notes.push_back("volume " + name + ": its local path is " +
                             std::to_string(volume.dir.size()) +
                             " bytes long, too long for a Unix socket in it; use a shorter "
                             "--state-dir");
      }
      content(v, volume, name);
    }
  }

  // Rewrites for the volumes this container mounts and its termination message.
  // Returns whether it mounts a serviceAccountToken volume.
  bool mounts(const Json& c, const std::string& home, ContainerLaunch& out) {
    bool token = false;
    for (const Json& m : list_of(c, "volumeMounts")) {
      const std::string name = str(m, "name");
      auto it = volumes_.find(name);
      if (it == volumes_.end()) {
        fail(kReasonConfigError, "volumeMount " + name + " names no volume of the Pod", out.name);
      }
      const Volume& v = it->second;
      token = token || v.token;
      const std::string local =
          dirs_below(v.dir, str(m, "subPath"), v.access.dir_mode, v.access.owner);
      out.rewrites.emplace_back(str(m, "mountPath"), local);
    }
    out.termination_path = home + "/termination-log";
    out_.files.push_back({out.termination_path, "", kPrivateFileMode, out.run_as.owner()});
    out.rewrites.emplace_back(str(c, "terminationMessagePath", kDefaultTerminationMessagePath),
                              out.termination_path);
    out.termination_policy = str(c, "terminationMessagePolicy", "File");
    std::stable_sort(out.rewrites.begin(), out.rewrites.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    return token;
  }

  // A value from a ConfigMap or Secret key; nullopt when optional and missing.
  std::optional<std::string> key_ref(const Json& ref, bool secret, const std::string& var,
                                     const std::string& container) {
    const std::string name = str(ref, "name"), key = str(ref, "key");
    const std::string what = std::string(secret ? "secret" : "configmap") + " \"" + name + "\"";
    const bool optional = flag(ref, "optional");
    auto object = lookup(secret, name);
    if (!object) {
      if (optional) return std::nullopt;
      wait_for(kReasonConfigError, "env " + var + ": " + what + " not found", container);
    }
    auto data = data_of(*object, secret, what);
    auto it = data.find(key);
    if (it == data.end()) {
      if (optional) return std::nullopt;
      wait_for(kReasonConfigError, "env " + var + ": couldn't find key " + key + " in " + what,
               container);
    }
    return it->second;
  }

  void base_environment(const std::string& home, bool kubeconfig, const ContainerLaunch& out,
                        EnvList& env) {
    env.set("PATH", kDefaultPath);
    env.set("HOSTNAME", str(member(pod_, "metadata"), "name"));
    env.set("HOME", home + "/work");
    for (const auto& [name, value] : in_.pass_env) env.set(name, value);
    for (const auto& [container_path, local] : out.rewrites) {
      if (container_path == "/tmp") env.set("TMPDIR", local);
    }
    if (kubeconfig && !in_.service_account_kubeconfig.empty()) {
      const std::string path = home + "/kubeconfig";
      out_.files.push_back(
          {path, in_.service_account_kubeconfig, kPrivateFileMode, out.run_as.owner()});
      env.set("KUBECONFIG", path);
      env.set("HEARTBEAT_KUBECONFIG", path);
    }
  }

  void env_from(const Json& c, const ContainerLaunch& out, EnvList& env) {
    for (const Json& source : list_of(c, "envFrom")) {
      const bool secret = source.contains("secretRef");
      const Json& ref = member(source, secret ? "secretRef" : "configMapRef");
      const std::string name = str(ref, "name");
      auto object = lookup(secret, name);
      if (!object) {
        if (flag(ref, "optional")) continue;
        wait_for(kReasonConfigError,
                 std::string("envFrom: ") + (secret ? "secret" : "configmap") + " \"" + name +
                     "\" not found",
                 out.name);
      }
      for (const auto& [key, value] : data_of(*object, secret, name)) {
        const std::string var = str(source, "prefix") + key;
        if (valid_env_name(var)) {
          env.set(var, rewrite_path(value, out.rewrites));
        } else {
          out_.notes.push_back("container " + out.name + ": envFrom " + name + ": skipped key " +
                               key + " (not a variable name)");
        }
      }
    }
  }

  void env_vars(const Json& c, const ContainerLaunch& out, EnvList& env) {
    for (const Json& e : list_of(c, "env")) {
      const std::string name = str(e, "name");
      const Json& from = member(e, "valueFrom");
      std::optional<std::string> value;
      if (!from.is_object()) {
        value = expand_references(str(e, "value"), env.vars());
      } else if (from.contains("secretKeyRef")) {
        value = key_ref(from["secretKeyRef"], true, name, out.name);
      } else if (from.contains("configMapKeyRef")) {
        value = key_ref(from["configMapKeyRef"], false, name, out.name);
      } else if (from.contains("fieldRef")) {
        value = field_value(pod_, str(from["fieldRef"], "fieldPath"), in_.node_name);
      } else {
        fail(kReasonUnsupported,
             "env " + name +
                 ": this valueFrom (e.g. resourceFieldRef) is not supported by hb-local-kubelet",
             out.name);
      }
      if (value) env.set(name, rewrite_path(*value, out.rewrites));
    }
  }

  // The image's entrypoint is the mapped binary (see program_for).
  void command(const Json& c, const std::string& binary, const EnvList& env, ContainerLaunch& out) {
    std::vector<std::string> command, args;
    for (const char* key : {"command", "args"}) {
      for (const Json& part : list_of(c, key)) {
        if (!part.is_string()) continue;
        std::string text =
            rewrite_path(expand_references(part.get<std::string>(), env.vars()), out.rewrites);
        (std::string(key) == "command" ? command : args).push_back(std::move(text));
      }
    }
    if (command.empty()) {
      out.argv.push_back(binary);
    } else {
      out.argv.push_back(program_for(command[0], binary, in_.executable));
      out.argv.insert(out.argv.end(), command.begin() + 1, command.end());
    }
    out.argv.insert(out.argv.end(), args.begin(), args.end());
  }

  void security_notes(const Json& c, const std::string& name) {
    static const std::set<std::string> kApplied = {"runAsUser", "runAsGroup", "runAsNonRoot",
                                                   "allowPrivilegeEscalation"};
    const Json& security = member(c, "securityContext");
    if (!security.is_object()) return;
    for (auto it = security.begin(); it != security.end(); ++it) {
      if (kApplied.count(it.key()) == 0) {
        out_.notes.push_back("container " + name + ": securityContext." + it.key() +
                             " is not enforced");
      }
    }
  }

  ContainerLaunch container(const Json& c, const RunAs& run_as) {
    ContainerLaunch out;
    out.name = str(c, "name");
    out.image = str(c, "image");
    out.run_as = run_as;
    auto binary = in_.images->binary_for(out.image);
    if (!binary) {
      wait_for("ErrImagePull",
               "hb-local-kubelet: image \"" + out.image +
                   "\" is not mapped to a local binary; start hb-local-kubelet "
                   "with --image=PREFIX=/path/to/binary for it",
               out.name);
    }
    const std::string home = in_.pod_dir + "/containers/" + out.name;
    const std::string work = home + "/work";
    out_.dirs.push_back({home, kPrivateDirMode, run_as.owner()});
    out_.dirs.push_back({work, kPrivateDirMode, run_as.owner()});
    out.log_path = in_.pod_dir + "/" + out.name + ".log";
    const bool token_mount = mounts(c, home, out);
    EnvList env;
    base_environment(home, automount_ || token_mount, out, env);
    env_from(c, out, env);
    env_vars(c, out, env);
    command(c, *binary, env, out);
    out.working_dir = work;
    if (std::string wd = str(c, "workingDir"); !wd.empty()) {
      const std::string local = rewrite_path(wd, out.rewrites);
      out.working_dir = local != wd ? local : dirs_below(work, wd, kPrivateDirMode, run_as.owner());
    }
    out.env = env.vars();
    security_notes(c, out.name);
    return out;
  }

  const Json& pod_;
  const PlanInputs& in_;
  const Json& spec_;
  const bool automount_;
  LocalLaunch out_;
  std::vector<RunAs> run_as_;  // by container index
  std::map<std::string, Volume> volumes_;
};

}  // namespace

std::string wants_service_account(const Json& pod) {
  const Json& spec = member(pod, "spec");
  if (automounts(spec)) return str(spec, "serviceAccountName");
  const Json& volumes = list_of(spec, "volumes");
  if (std::any_of(volumes.begin(), volumes.end(), has_token_source)) {
    return str(spec, "serviceAccountName", "default");
  }
  return "";
}

RunAs run_as_for(const Json& pod_security_context, const Json& container_security_context) {
  RunAs r;
  auto pick = [&](const char* key) {
    auto value = int_of(container_security_context, key);
    return value ? value : int_of(pod_security_context, key);
  };
  r.uid = pick("runAsUser");
  if (r.uid) r.gid = pick("runAsGroup").value_or(*r.uid);
  auto add_group = [&](int64_t group) {
    if (std::find(r.groups.begin(), r.groups.end(), group) == r.groups.end()) {
      r.groups.push_back(group);
    }
  };
  if (auto fs_group = int_of(pod_security_context, "fsGroup")) add_group(*fs_group);
  for (const Json& group : list_of(pod_security_context, "supplementalGroups")) {
    if (group.is_number_integer()) add_group(group.get<int64_t>());
  }
  const Json& escalation = member(container_security_context, "allowPrivilegeEscalation");
  r.no_new_privs = escalation.is_boolean() && !escalation.get<bool>();
  return r;
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
