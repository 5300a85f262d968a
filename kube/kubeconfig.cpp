#include "kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hb::kube {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t start = s.find_first_not_of(" \n\r\t");
  return start == std::string::npos ? std::string() : s.substr(start);
}

Error config_error(std::string context, std::string message) {
  Error error;
  error.kind = ErrorKind::kConfig;
  error.context = std::move(context);
  error.message = std::move(message);
  return error;
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {
    std::error_code ec;  // no folder known: relative paths stay relative to the process's
    base_dir_ = path_.empty() ? fs::current_path(ec) : fs::absolute(path_, ec).parent_path();
  }

  // "kubeconfig PATH: KEY: PROBLEM"
  Error fail(const std::string& key, const std::string& problem) const {
    return config_error("kubeconfig " + path_, key + ": " + problem);
  }

  Result<std::string> scalar(const YAML::Node& node, const std::string& key,
                             const std::string& where) const {
    // Subscripting a scalar or list throws YAML::BadSubscript; say what is wrong instead.
    if (!node.IsMap()) return fail(where, "must be a map");
    YAML::Node value = node[key];
    if (!value) return std::string();
    if (!value.IsScalar()) return fail(where + "." + key, "must be a string");
    return value.as<std::string>();
  }

  // Finds the entry of `list` (clusters, users, contexts) called `name`.
  Result<YAML::Node> named(const YAML::Node& root, const std::string& list, const std::string& name,
                           const std::string& inner, const std::string& referenced_by) const {
    YAML::Node entries = root[list];
    if (entries && !entries.IsSequence()) return fail(list, "must be a list");
    if (entries) {
      for (const auto& entry : entries) {
        if (!entry.IsMap()) return fail(list, "every entry must be a map with name and " + inner);
        if (entry["name"] && entry["name"].IsScalar() && entry["name"].as<std::string>() == name) {
          YAML::Node body = entry[inner];
          if (!body || !body.IsMap())
            return fail(list + "[name=" + name + "]." + inner, "is missing or not a map");
          return body;
        }
      }
    }
    return fail(referenced_by, "names " + list.substr(0, list.size() - 1) + " \"" + name +
                                   "\", which is not in " + list);
  }

  std::string resolve(const std::string& file) const {
    if (file.empty()) return file;
    fs::path p(file);
    return p.is_absolute() ? p.string() : (base_dir_ / p).lexically_normal().string();
  }

  // `<key>-data` (base64) wins over `<key>` (a file path).
  Result<std::string> pem(const YAML::Node& node, const std::string& key,
                          const std::string& where) const {
    HB_TRY_ASSIGN(const std::string data, scalar(node, key + "-data", where));
    if (!data.empty()) {
      Result<std::string> decoded = base64_decode(data);
      if (!decoded.ok()) {
        return fail(where + "." + key + "-data",
                    "is not valid base64 (" + decoded.error().message + ")");
      }
      return decoded;
    }
    HB_TRY_ASSIGN(const std::string file, scalar(node, key, where));
    if (file.empty()) return std::string();
    std::string resolved = resolve(file);
    auto contents = read_file(resolved);
    if (!contents) return fail(where + "." + key, "cannot read file " + resolved);
    return *std::move(contents);
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  fs::path base_dir_;
};

// yaml-cpp reports a syntax error by throwing: caught here, at the call.
Result<YAML::Node> load_yaml(const std::string& text, const std::string& path) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return config_error("kubeconfig " + path, "not valid YAML at line " +
                                                  std::to_string(e.mark.line + 1) + ", column " +
                                                  std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
}

// What the chosen context names.
struct ContextRefs {
  std::string name;
  std::string where;  // "contexts[name=NAME].context", for errors
  std::string cluster;
  std::string user;
  std::string ns;
};

Result<ContextRefs> read_context(const Reader& r, const YAML::Node& root,
                                 const std::string& context_override) {
  ContextRefs out;
  out.name = context_override;
  if (out.name.empty()) {
    HB_TRY_ASSIGN(out.name, r.scalar(root, "current-context", ""));
  }
  if (out.name.empty()) return r.fail("current-context", "is empty; set it or pass a context");
  HB_TRY_ASSIGN(const YAML::Node context,
                r.named(root, "contexts", out.name, "context",
                        context_override.empty() ? "current-context" : "context (override)"));
  out.where = "contexts[name=" + out.name + "].context";
  HB_TRY_ASSIGN(out.cluster, r.scalar(context, "cluster", out.where));
  if (out.cluster.empty()) return r.fail(out.where + ".cluster", "is missing");
  HB_TRY_ASSIGN(out.user, r.scalar(context, "user", out.where));
  HB_TRY_ASSIGN(out.ns, r.scalar(context, "namespace", out.where));
  return out;
}

// The context's cluster: its server and the CA that vouches for it.
Done read_cluster(const Reader& r, const YAML::Node& root, const ContextRefs& context,
                  ClusterConfig& out) {
  HB_TRY_ASSIGN(const YAML::Node cluster,
                r.named(root, "clusters", context.cluster, "cluster", context.where + ".cluster"));
  const std::string where = "clusters[name=" + context.cluster + "].cluster";
  HB_TRY_ASSIGN(out.server, r.scalar(cluster, "server", where));
  if (out.server.empty()) return r.fail(where + ".server", "is missing");
  if (out.server.rfind("https://", 0) != 0 && out.server.rfind("http://", 0) != 0) {
    return r.fail(where + ".server", "\"" + out.server + "\" must start with https:// or http://");
  }
  while (!out.server.empty() && out.server.back() == '/') out.server.pop_back();
  HB_TRY_ASSIGN(const std::string skip, r.scalar(cluster, "insecure-skip-tls-verify", where));
  out.tls.insecure_skip_verify = skip == "true";
  HB_TRY_ASSIGN(const std::string ca_data, r.scalar(cluster, "certificate-authority-data", where));
  HB_TRY_ASSIGN(out.tls.ca_pem, r.pem(cluster, "certificate-authority", where));
  if (!ca_data.empty()) {
    out.ca_description = where + ".certificate-authority-data in " + r.path();
  } else if (!out.tls.ca_pem.empty()) {
    HB_TRY_ASSIGN(const std::string ca_file, r.scalar(cluster, "certificate-authority", where));
    out.ca_description = r.resolve(ca_file);
  } else {
    out.ca_description = "system CAs";
  }
  return done();
}

// The context's user: a client certificate, a token (or its file), a password.
Done read_user(const Reader& r, const YAML::Node& root, const ContextRefs& context,
               ClusterConfig& out) {
  HB_TRY_ASSIGN(const YAML::Node user,
                r.named(root, "users", context.user, "user", context.where + ".user"));
  const std::string where = "users[name=" + context.user + "].user";
  HB_TRY_ASSIGN(out.tls.client_cert_pem, r.pem(user, "client-certificate", where));
  HB_TRY_ASSIGN(out.tls.client_key_pem, r.pem(user, "client-key", where));
  if (out.tls.client_cert_pem.empty() != out.tls.client_key_pem.empty()) {
    return r.fail(where, "client-certificate and client-key must be given together");
  }
  HB_TRY_ASSIGN(const std::string token, r.scalar(user, "token", where));
  out.token = trim(token);
  HB_TRY_ASSIGN(const std::string token_file, r.scalar(user, "tokenFile", where));
  if (!token_file.empty()) {
    out.token_file = r.resolve(token_file);
    if (!read_file(out.token_file))
      return r.fail(where + ".tokenFile", "cannot read file " + out.token_file);
  }
  HB_TRY_ASSIGN(out.username, r.scalar(user, "username", where));
  HB_TRY_ASSIGN(out.password, r.scalar(user, "password", where));
  const bool plugin = user["exec"] || user["auth-provider"];
  if (plugin && out.token.empty() && out.token_file.empty() && out.tls.client_cert_pem.empty()) {
    return r.fail(
        where,
        "exec and auth-provider plugins are not supported; use a token or client certificate");
  }
  return done();
}

}  // namespace

std::optional<std::string> process_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Result<ClusterConfig> parse_kubeconfig(const std::string& text, const std::string& path,
                                       const std::string& context_override) {
  const Reader r(path);
  HB_TRY_ASSIGN(const YAML::Node root, load_yaml(text, path));
  if (!root || !root.IsMap()) {
    return r.fail("(top level)", "must be a map with clusters, users and contexts");
  }
  HB_TRY_ASSIGN(const ContextRefs context, read_context(r, root, context_override));
  ClusterConfig out;
  out.source = "kubeconfig " + path + ", context " + context.name;
  if (!context.ns.empty()) out.default_namespace = context.ns;
  HB_TRY(read_cluster(r, root, context, out));
  if (!context.user.empty()) HB_TRY(read_user(r, root, context, out));
  return out;
}

Result<ClusterConfig> load_kubeconfig_file(const std::string& path, const std::string& context) {
  auto text = read_file(path);
  if (!text) return config_error("kubeconfig " + path, "cannot read the file");
  return parse_kubeconfig(*text, path, context);
}

Result<ClusterConfig> load_in_cluster(const EnvLookup& env, const std::string& sa_dir) {
  const std::string context = "in-cluster config";
  auto host = env("KUBERNETES_SERVICE_HOST");
  auto port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return config_error(context, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  ClusterConfig out;
  bool ipv6 = host->find(':') != std::string::npos;
  out.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  out.token_file = sa_dir + "/token";
  if (!read_file(out.token_file)) {
    return config_error(context, "cannot read service-account token " + out.token_file);
  }
  out.tls.ca_file = sa_dir + "/ca.crt";
  if (!read_file(out.tls.ca_file)) {
    return config_error(context, "cannot read service-account CA " + out.tls.ca_file);
  }
  out.ca_description = out.tls.ca_file;
  if (auto ns = read_file(sa_dir + "/namespace")) {
    std::string trimmed = trim(*ns);
    if (!trimmed.empty()) out.default_namespace = trimmed;
  }
  out.source = "in-cluster";
  return out;
}

Result<ClusterConfig> load_default(const std::string& explicit_path, const std::string& context,
                                   const EnvLookup& env) {
  if (!explicit_path.empty()) return load_kubeconfig_file(explicit_path, context);
  if (auto list = env("KUBECONFIG"); list && !list->empty()) {
    std::string first = list->substr(0, list->find(':'));
    return load_kubeconfig_file(first, context);
  }
  if (auto home = env("HOME"); home && !home->empty()) {
    std::string path = *home + "/.kube/config";
    std::error_code ec;
    if (fs::exists(path, ec)) return load_kubeconfig_file(path, context);
  }
  Result<ClusterConfig> in_cluster = load_in_cluster(env);
  if (in_cluster.ok()) return in_cluster;
  return config_error(
      "no Kubernetes configuration",
      "no --kubeconfig, $KUBECONFIG or ~/.kube/config, and " + in_cluster.error().describe());
}

TokenSource::TokenSource(const ClusterConfig& config, Clock clock)
    : static_token_(config.token), token_file_(config.token_file), clock_(std::move(clock)) {}

std::string TokenSource::token() {
  std::lock_guard lock(mutex_);
  if (token_file_.empty()) return static_token_;
  auto now = clock_();
  if (!read_at_ || now - *read_at_ >= kTokenFileRereadInterval) {
    if (auto contents = read_file(token_file_)) {
      cached_ = trim(*contents);
    }  // an unreadable file keeps the last good token; the 401 tells the story
    read_at_ = now;
  }
  return cached_.empty() ? static_token_ : cached_;
}

void TokenSource::invalidate() {
  std::lock_guard lock(mutex_);
  read_at_.reset();
}

}  // namespace hb::kube
