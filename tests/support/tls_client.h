// A blocking TLS client on OpenSSL for tests of a listener's TLS edge: one
// request, then everything until the server closes. Its socket has a receive
// timeout, so a test whose server never answers fails instead of hanging.
#pragma once

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>

#include "tests/support/loopback.h"

namespace hb::test_support {

struct TlsReply {
  bool handshake_ok = false;
  std::string error;     // why the handshake failed
  std::string version;   // "TLSv1.3", say
  std::string peer_cn;   // the server certificate's CN
  std::string response;  // the bytes after the request, until the close
};

struct TlsClientOptions {
  std::string ca_pem;   // the only CA trusted; empty: no verification (curl -k)
  std::string host;     // the name the certificate must carry (with ca_pem)
  int max_version = 0;  // e.g. TLS1_1_VERSION; 0: OpenSSL's own
};

inline std::string peer_common_name(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  char cn[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn);
  X509_free(cert);
  return cn;
}

inline bool trust(SSL_CTX* ctx, const std::string& ca_pem) {
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  const bool ok = ca != nullptr && X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca) == 1;
  X509_free(ca);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return ok;
}

inline void exchange(SSL* ssl, const std::string& request, TlsReply& out) {
  out.handshake_ok = true;
  out.version = SSL_get_version(ssl);
  out.peer_cn = peer_common_name(ssl);
  SSL_write(ssl, request.data(), static_cast<int>(request.size()));
  char buf[4096];
  int n;
  while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) out.response.append(buf, static_cast<size_t>(n));
}

inline TlsReply tls_request(int port, const std::string& request,
                            const TlsClientOptions& options = {}) {
  TlsReply out;
  ::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes with write(2): a closed peer is an error
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = loopback(port);
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    out.error = "connect failed";
    return out;
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (options.max_version != 0) SSL_CTX_set_max_proto_version(ctx, options.max_version);
  if (!options.ca_pem.empty() && !trust(ctx, options.ca_pem)) out.error = "bad CA PEM";
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  if (!options.host.empty()) {
    SSL_set_tlsext_host_name(ssl, options.host.c_str());
    SSL_set1_host(ssl, options.host.c_str());
  }
  if (out.error.empty() && SSL_connect(ssl) == 1) {
    exchange(ssl, request, out);
  } else if (out.error.empty()) {
    const unsigned long code = ERR_get_error();
    out.error = code != 0 ? ERR_error_string(code, nullptr) : "handshake failed";
  }
  ERR_clear_error();
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ::close(fd);
  return out;
}

}  // namespace hb::test_support
