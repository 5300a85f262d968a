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

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {
    base_dir_ = path_.empty() ? fs::current_path() : fs::absolute(path_).parent_path();
  }

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw ConfigError("kubeconfig " + path_ + ": " + key + ": " + problem);
  }

  std::string scalar(const YAML::Node& node, const std::string& key,
                     const std::string& where) const {
    // Subscripting a scalar or list throws YAML::BadSubscript; say what is wrong instead.
    if (!node.IsMap()) fail(where, "must be a map");
    YAML::Node value = node[key];
    if (!value) return "";
    if (!value.IsScalar()) fail(where + "." + key, "must be a string");
    return value.as<std::string>();
  }

  // Finds the entry of `list` (clusters, users, contexts) called `name`.
  YAML::Node named(const YAML::Node& root, const std::string& list, const std::string& name,
                   const std::string& inner, const std::string& referenced_by) const {
    YAML::Node entries = root[list];
    if (entries && !entries.IsSequence()) fail(list, "must be a list");
    if (entries) {
      for (const auto& entry : entries) {
        if (!entry.IsMap()) fail(list, "every entry must be a map with name and " + inner);
        if (entry["name"] && entry["name"].IsScalar() && entry["name"].as<std::string>() == name) {
          YAML::Node body = entry[inner];
          if (!body || !body.IsMap())
            fail(list + "[name=" + name + "]." + inner, "is missing or not a map");
          return body;
        }
      }
    }
    fail(referenced_by,
         "names " + list.substr(0, list.size() - 1) + " \"" + name + "\", which is not in " + list);
  }

  std::string resolve(const std::string& file) const {
    if (file.empty()) return file;
    fs::path p(file);
    return p.is_absolute() ? p.string() : (base_dir_ / p).lexically_normal().string();
  }

  // `<key>-data` (base64) wins over `<key>` (a file path).
  std::string pem(const YAML::Node& node, const std::string& key, const std::string& where) const {
    std::string data = scalar(node, key + "-data", where);
    if (!data.empty()) {
      try {
        return base64_decode(data);
      } catch (const std::invalid_argument&) {
        fail(where + "." + key + "-data", "is not valid base64");
      }
    }
    std::string file = scalar(node, key, where);
    if (file.empty()) return "";
    std::string resolved = resolve(file);
    auto contents = read_file(resolved);
    if (!contents) fail(where + "." + key, "cannot read file " + resolved);
    return *contents;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  fs::path base_dir_;
};

}  // namespace

std::optional<std::string> process_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

ClusterConfig parse_kubeconfig(const std::string& text, const std::string& path,
                               const std::string& context_override) {
  Reader r(path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError("kubeconfig " + path + ": not valid YAML at line " +
                      std::to_string(e.mark.line + 1) + ", column " +
                      std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  if (!root || !root.IsMap())
    r.fail("(top level)", "must be a map with clusters, users and contexts");

  std::string context_name = context_override;
  if (context_name.empty()) context_name = r.scalar(root, "current-context", "");
  if (context_name.empty()) r.fail("current-context", "is empty; set it or pass a context");

  YAML::Node context = r.named(root, "contexts", context_name, "context",
                               context_override.empty() ? "current-context" : "context (override)");
  std::string where_ctx = "contexts[name=" + context_name + "].context";
  std::string cluster_name = r.scalar(context, "cluster", where_ctx);
  if (cluster_name.empty()) r.fail(where_ctx + ".cluster", "is missing");
  std::string user_name = r.scalar(context, "user", where_ctx);

  ClusterConfig out;
  out.source = "kubeconfig " + path + ", context " + context_name;
  std::string ns = r.scalar(context, "namespace", where_ctx);
  if (!ns.empty()) out.default_namespace = ns;

  YAML::Node cluster = r.named(root, "clusters", cluster_name, "cluster", where_ctx + ".cluster");
  std::string where_cl = "clusters[name=" + cluster_name + "].cluster";
  out.server = r.scalar(cluster, "server", where_cl);
  if (out.server.empty()) r.fail(where_cl + ".server", "is missing");
  if (out.server.rfind("https://", 0) != 0 && out.server.rfind("http://", 0) != 0) {
    r.fail(where_cl + ".server", "\"" + out.server + "\" must start with https:// or http://");
  }
  while (!out.server.empty() && out.server.back() == '/') out.server.pop_back();
  std::string skip = r.scalar(cluster, "insecure-skip-tls-verify", where_cl);
  out.tls.insecure_skip_verify = skip == "true";
  std::string ca_data = r.scalar(cluster, "certificate-authority-data", where_cl);
  out.tls.ca_pem = r.pem(cluster, "certificate-authority", where_cl);
  out.ca_description = !ca_data.empty() ? where_cl + ".certificate-authority-data in " + path
                       : !out.tls.ca_pem.empty()
                           ? r.resolve(r.scalar(cluster, "certificate-authority", where_cl))
                           : "system CAs";

  if (!user_name.empty()) {
    YAML::Node user = r.named(root, "users", user_name, "user", where_ctx + ".user");
    std::string where_u = "users[name=" + user_name + "].user";
    out.tls.client_cert_pem = r.pem(user, "client-certificate", where_u);
    out.tls.client_key_pem = r.pem(user, "client-key", where_u);
    if (out.tls.client_cert_pem.empty() != out.tls.client_key_pem.empty()) {
      r.fail(where_u, "client-certificate and client-key must be given together");
    }
    out.token = trim(r.scalar(user, "token", where_u));
    std::string token_file = r.scalar(user, "tokenFile", where_u);
    if (!token_file.empty()) {
      out.token_file = r.resolve(token_file);
      if (!read_file(out.token_file))
        r.fail(where_u + ".tokenFile", "cannot read file " + out.token_file);
    }
    out.username = r.scalar(user, "username", where_u);
    out.password = r.scalar(user, "password", where_u);
    if (user["exec"] || user["auth-provider"]) {
      if (out.token.empty() && out.token_file.empty() && out.tls.client_cert_pem.empty()) {
        r.fail(
            where_u,
            "exec and auth-provider plugins are not supported; use a token or client certificate");
      }
    }
  }
  return out;
}

ClusterConfig load_kubeconfig_file(const std::string& path, const std::string& context) {
  auto text = read_file(path);
  if (!text) throw ConfigError("kubeconfig " + path + ": cannot read the file");
  return parse_kubeconfig(*text, path, context);
}

ClusterConfig load_in_cluster(const EnvLookup& env, const std::string& sa_dir) {
  auto host = env("KUBERNETES_SERVICE_HOST");
  auto port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    throw ConfigError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  ClusterConfig out;
  bool ipv6 = host->find(':') != std::string::npos;
  out.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  out.token_file = sa_dir + "/token";
  if (!read_file(out.token_file)) {
    throw ConfigError("in-cluster config: cannot read service-account token " + out.token_file);
  }
  out.tls.ca_file = sa_dir + "/ca.crt";
  if (!read_file(out.tls.ca_file)) {
    throw ConfigError("in-cluster config: cannot read service-account CA " + out.tls.ca_file);
  }
  out.ca_description = out.tls.ca_file;
  if (auto ns = read_file(sa_dir + "/namespace")) {
    std::string trimmed = trim(*ns);
    if (!trimmed.empty()) out.default_namespace = trimmed;
  }
  out.source = "in-cluster";
  return out;
}

ClusterConfig load_default(const std::string& explicit_path, const std::string& context,
                           const EnvLookup& env) {
  if (!explicit_path.empty()) return load_kubeconfig_file(explicit_path, context);
  if (auto list = env("KUBECONFIG"); list && !list->empty()) {
    std::string first = list->substr(0, list->find(':'));
    return load_kubeconfig_file(first, context);
  }
  if (auto home = env("HOME"); home && !home->empty()) {
    std::string path = *home + "/.kube/config";
    if (fs::exists(path)) return load_kubeconfig_file(path, context);
  }
  try {
    return load_in_cluster(env);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("no Kubernetes configuration: no --kubeconfig, $KUBECONFIG or "
                                  "~/.kube/config, and ") +
                      e.what());
  }
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
