// The TLS side of a listener (http::make_server): one OpenSSL server context
// holding the certificate and key, TLS 1.2 at least, the server's order of
// modern AEAD ciphers (forward secret only). ServerTls lets the certificate
// change under a running listener: each new connection takes the context
// current at its accept, and a connection keeps the one it started with.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "kube/errors.h"

namespace boost::asio::ssl {
class context;
}

namespace hb::http {

using SslContext = std::shared_ptr<boost::asio::ssl::context>;

// Certificate files of a directory, as a kubernetes.io/tls Secret mounts them.
inline constexpr const char* kTlsCertFile = "tls.crt";
inline constexpr const char* kTlsKeyFile = "tls.key";

// A certificate chain and its key in PEM. `cert_source` and `key_source`
// name where they came from in errors ("/certs/tls.key", say); the key
// itself never appears in one.
kube::Result<SslContext> server_context_from_pem(const std::string& cert_pem,
                                                 const std::string& key_pem,
                                                 const std::string& cert_source,
                                                 const std::string& key_source);

// DIR/tls.crt and DIR/tls.key. Errors name the file and what to do.
kube::Result<SslContext> server_context_from_dir(const std::string& dir);

class ServerTls {
 public:
  explicit ServerTls(SslContext context) : context_(std::move(context)) {}
  SslContext current() const {
    std::lock_guard lock(mutex_);
    return context_;
  }
  void replace(SslContext context) {
    std::lock_guard lock(mutex_);
    context_ = std::move(context);
  }

 private:
  mutable std::mutex mutex_;
  SslContext context_;
};

}  // namespace hb::http
