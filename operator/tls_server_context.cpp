#include "operator/tls_server_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/ssl/context.hpp>
#include <fstream>
#include <sstream>

namespace hb::operator_ {

namespace {

namespace ssl = boost::asio::ssl;

// Forward secret AEAD suites, the server's order first (TLS 1.3 keeps
// OpenSSL's own, all AEAD). The same list as Go's crypto/tls defaults.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
// A certificate or key file larger than this is not one.
constexpr std::size_t kPemBytesMax = 1024 * 1024;

// `detail`: OpenSSL's reason, when it gave one (never key material).
kube::Error tls_failure(const std::string& source, const std::string& why,
                        const std::string& detail = "") {
  kube::Error e;
  e.kind = kube::ErrorKind::kInvalid;
  e.context = source;
  e.message = why + (detail.empty() ? "" : " (" + detail + ")");
  ERR_clear_error();
  return e;
}

kube::Result<std::string> read_pem_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return tls_failure(path,
                       "cannot read it; mount a kubernetes.io/tls Secret there (tls.crt, "
                       "tls.key) or leave --metrics-cert-dir out for a self-signed certificate");
  }
  std::ostringstream out;
  out << in.rdbuf();
  if (out.str().size() > kPemBytesMax)
    return tls_failure(path, "larger than 1 MiB; not a PEM file");
  return out.str();
}

bool configure_server(SSL_CTX* ctx) {
  SSL_CTX_set_options(
      ctx, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  return SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
         SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) == 1;
}

}  // namespace

kube::Result<SslContext> server_context_from_pem(const std::string& cert_pem,
                                                 const std::string& key_pem,
                                                 const std::string& cert_source,
                                                 const std::string& key_source) {
  ERR_clear_error();
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* ctx = context->native_handle();
  if (!configure_server(ctx))
    return tls_failure("TLS settings", "OpenSSL refused the TLS settings");
  boost::system::error_code ec;
  context->use_certificate_chain(boost::asio::buffer(cert_pem), ec);
  if (ec) return tls_failure(cert_source, "not a PEM certificate chain", ec.message());
  // OpenSSL checks the key against the certificate as it takes it.
  context->use_private_key(boost::asio::buffer(key_pem), ssl::context::pem, ec);
  if (ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
    return tls_failure(key_source, "not the key of the certificate in " + cert_source);
  }
  if (ec) {
    return tls_failure(key_source, "not a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1)");
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return tls_failure(key_source, "not the key of the certificate in " + cert_source);
  }
  return context;
}

kube::Result<SslContext> server_context_from_dir(const std::string& dir) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  const std::string cert_path = base + kTlsCertFile, key_path = base + kTlsKeyFile;
  HB_TRY_ASSIGN(const std::string cert, read_pem_file(cert_path));
  HB_TRY_ASSIGN(const std::string key, read_pem_file(key_path));
  return server_context_from_pem(cert, key, cert_path, key_path);
}

}  // namespace hb::operator_
