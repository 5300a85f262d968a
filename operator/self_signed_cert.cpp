#include "operator/self_signed_cert.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace hb::operator_ {

namespace {

template <auto Free>
struct OpenSslFree {
  template <class T>
  void operator()(T* p) const {
    Free(p);
  }
};
using PKey = std::unique_ptr<EVP_PKEY, OpenSslFree<EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, OpenSslFree<X509_free>>;
using Bio = std::unique_ptr<BIO, OpenSslFree<BIO_free>>;
using Ext = std::unique_ptr<X509_EXTENSION, OpenSslFree<X509_EXTENSION_free>>;

constexpr int kSerialBytes = 16;
// X.509's upper bound on a CommonName (ub-common-name); SANs have none this short.
constexpr std::size_t kCommonNameBytesMax = 64;

kube::Error cert_failure(const std::string& what) {
  kube::Error e;
  e.kind = kube::ErrorKind::kOther;
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  e.message = what + (code != 0 ? std::string(": ") + ERR_reason_error_string(code) : "");
  e.context = "self-signed certificate";
  return e;
}

PKey p256_key() {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr);
  EVP_PKEY* key = nullptr;
  if (ctx != nullptr && EVP_PKEY_keygen_init(ctx) == 1 &&
      EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) == 1) {
    EVP_PKEY_keygen(ctx, &key);
  }
  EVP_PKEY_CTX_free(ctx);
  return PKey(key);
}

bool is_ip_address(const std::string& name) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, name.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

std::string alt_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ",";
    out += (is_ip_address(n) ? "IP:" : "DNS:") + n;
  }
  return out;
}

// The first name that fits in a CN; a Service's DNS name can be longer
// than 64 bytes, and is then named by the SANs alone.
const std::string& common_name(const std::vector<std::string>& names) {
  static const std::string kFallback = "heartbeat-operator";
  for (const std::string& n : names) {
    if (n.size() <= kCommonNameBytesMax) return n;
  }
  return kFallback;
}

bool add_extension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  Ext ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

bool fill_certificate(X509* cert, EVP_PKEY* key, const std::vector<std::string>& names,
                      std::chrono::seconds validity) {
  unsigned char serial[kSerialBytes];
  if (RAND_bytes(serial, sizeof serial) != 1) return false;
  serial[0] &= 0x7f;  // a positive INTEGER
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  const bool serial_set = bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
  BN_free(bn);
  X509_NAME* subject = X509_get_subject_name(cert);
  const auto* cn = reinterpret_cast<const unsigned char*>(common_name(names).c_str());
  return serial_set && X509_set_version(cert, 2) == 1 &&
         X509_gmtime_adj(X509_getm_notBefore(cert),
                         -std::chrono::seconds(kSelfSignedBackdate).count()) != nullptr &&
         X509_gmtime_adj(X509_getm_notAfter(cert), validity.count()) != nullptr &&
         X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, cn, -1, -1, 0) == 1 &&
         X509_set_issuer_name(cert, subject) == 1 && X509_set_pubkey(cert, key) == 1 &&
         add_extension(cert, NID_subject_alt_name, alt_names(names)) &&
         add_extension(cert, NID_basic_constraints, "critical,CA:FALSE") &&
         add_extension(cert, NID_key_usage, "critical,digitalSignature") &&
         add_extension(cert, NID_ext_key_usage, "serverAuth") &&
         X509_sign(cert, key, EVP_sha256()) > 0;
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return size > 0 ? std::string(data, static_cast<std::size_t>(size)) : std::string();
}

}  // namespace

kube::Result<CertificatePem> self_signed_certificate(const std::vector<std::string>& names,
                                                     std::chrono::seconds validity) {
  if (names.empty()) return cert_failure("no name to issue it for");
  PKey key = p256_key();
  if (!key) return cert_failure("cannot make an ECDSA P-256 key");
  Cert cert(X509_new());
  if (!cert || !fill_certificate(cert.get(), key.get(), names, validity)) {
    return cert_failure("cannot make the certificate");
  }
  Bio cert_bio(BIO_new(BIO_s_mem())), key_bio(BIO_new(BIO_s_mem()));
  if (!cert_bio || !key_bio || PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return cert_failure("cannot encode the certificate");
  }
  return CertificatePem{bio_text(cert_bio.get()), bio_text(key_bio.get())};
}

}  // namespace hb::operator_
