// Where the API server is and how to authenticate: from a kubeconfig file or
// from the in-cluster service account. Errors (kind kConfig) name the file and
// the key.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "http/http.h"
#include "kube/errors.h"

namespace hb::kube {

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
// Projected service-account tokens rotate; re-read the file at least this often.
inline constexpr std::chrono::seconds kTokenFileRereadInterval{60};

struct ClusterConfig {
  std::string server;  // "https://host:port", no trailing slash
  http::TlsOptions tls;
  std::string ca_description;  // for TLS error messages
  std::string token;           // static bearer token
  std::string token_file;      // bearer token re-read from this file
  std::string username, password;
  std::string default_namespace = "default";
  std::string source;  // "kubeconfig /path, context x" or "in-cluster"
};

// Parses kubeconfig text. `path` names the file in errors and is the base for
// relative certificate and token paths. `context` overrides current-context.
Result<ClusterConfig> parse_kubeconfig(const std::string& text, const std::string& path,
                                       const std::string& context = "");
Result<ClusterConfig> load_kubeconfig_file(const std::string& path,
                                           const std::string& context = "");

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
std::optional<std::string> process_env(const std::string& name);

// KUBERNETES_SERVICE_HOST/PORT (IPv6 in brackets), token and CA from sa_dir.
Result<ClusterConfig> load_in_cluster(const EnvLookup& env = process_env,
                                      const std::string& sa_dir = kServiceAccountDir);

// Explicit path, else the first file of $KUBECONFIG, else ~/.kube/config,
// else in-cluster. The error lists what was tried.
Result<ClusterConfig> load_default(const std::string& explicit_path = "",
                                   const std::string& context = "",
                                   const EnvLookup& env = process_env);

// Supplies the bearer token; for a token file, re-reads it every
// kTokenFileRereadInterval and at once after invalidate() (called on a 401).
class TokenSource {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit TokenSource(const ClusterConfig& config, Clock clock = std::chrono::steady_clock::now);
  std::string token();
  void invalidate();

 private:
  std::mutex mutex_;
  std::string static_token_;
  std::string token_file_;
  Clock clock_;
  std::string cached_;
  std::optional<std::chrono::steady_clock::time_point> read_at_;
};

// kMalformed naming the offset of the first character outside the alphabet.
Result<std::string> base64_decode(const std::string& in);
std::string base64_encode(const std::string& in);

}  // namespace hb::kube
