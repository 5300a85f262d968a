// The server contexts a TLS listener (http/server_tls.h) serves with: one
// OpenSSL server context holding the certificate and key, TLS 1.2 at least,
// the server's order of modern AEAD ciphers (forward secret only).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "http/server_tls.h"
#include "kube/errors.h"

namespace hb::operator_ {

using http::SslContext;

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
}  // namespace hb::operator_
