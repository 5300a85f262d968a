// The TLS listener's certificate: the self-signed one made in memory, and a
// cert dir's pair, refused with the file named when it is missing or bad.
#include "operator/tls_server_context.h"

#include <gtest/gtest.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "operator/self_signed_cert.h"

namespace hb::http {
namespace {

using namespace hb::operator_;

using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
std::unique_ptr<X509, X509Free> parse(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return std::unique_ptr<X509, X509Free>(cert);
}

std::string alt_names(X509* cert) {
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  std::string out;
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (n->type == GEN_DNS) {
      out +=
          "DNS:" + std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(n->d.dNSName))) +
          " ";
    }
    if (n->type == GEN_IPADD) out += "IP:" + std::to_string(n->d.iPAddress->length) + "B ";
  }
  GENERAL_NAMES_free(names);
  return out;
}

TEST(SelfSignedCertificate, IsAnEcdsaP256CertificateForTheNamesValidForTheTimeGiven) {
  const CertificatePem pem =
      self_signed_certificate({"hb-metrics.ops.svc", "localhost", "127.0.0.1"}, 365 * 24h)
          .or_throw();
  auto cert = parse(pem.cert_pem);
  ASSERT_TRUE(cert);
  char cn[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn, sizeof cn);
  EXPECT_STREQ(cn, "hb-metrics.ops.svc");
  EXPECT_EQ(alt_names(cert.get()), "DNS:hb-metrics.ops.svc DNS:localhost IP:4B ");
  EVP_PKEY* key = X509_get0_pubkey(cert.get());
  ASSERT_EQ(EVP_PKEY_base_id(key), EVP_PKEY_EC);
  char curve[64] = {0};
  EVP_PKEY_get_utf8_string_param(key, "group", curve, sizeof curve, nullptr);
  EXPECT_STREQ(curve, "prime256v1");
  int days = 0, seconds = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert.get()),
                           X509_get0_notAfter(cert.get())),
            1);
  EXPECT_EQ(days, 365);  // plus the hour it is backdated
  EXPECT_EQ(seconds, 3600);
  EXPECT_EQ(pem.cert_pem.find("PRIVATE KEY"), std::string::npos);
  EXPECT_NE(pem.key_pem.find("BEGIN PRIVATE KEY"), std::string::npos);
  // A Service's DNS name may pass the CN's 64 bytes: the SANs carry it.
  const std::string long_name =
      "hbh1739620080-heartbeat-operator-metrics.hb-it-helm-1739620080.svc";
  ASSERT_GT(long_name.size(), 64u);
  auto long_cert = parse(self_signed_certificate({long_name, "localhost"}, 1h).or_throw().cert_pem);
  ASSERT_TRUE(long_cert);
  X509_NAME_get_text_by_NID(X509_get_subject_name(long_cert.get()), NID_commonName, cn, sizeof cn);
  EXPECT_STREQ(cn, "localhost");
  EXPECT_EQ(alt_names(long_cert.get()), "DNS:" + long_name + " DNS:localhost ");
  // Two certificates never share a key.
  EXPECT_NE(self_signed_certificate({"localhost"}, 1h).or_throw().key_pem, pem.key_pem);
  EXPECT_FALSE(self_signed_certificate({}, 1h).ok());
}

TEST(ServerContext, LoadsThePemPairAndRefusesAKeyOfAnotherCertificate) {
  const CertificatePem a = self_signed_certificate({"localhost"}, 1h).or_throw();
  const CertificatePem b = self_signed_certificate({"localhost"}, 1h).or_throw();
  EXPECT_TRUE(server_context_from_pem(a.cert_pem, a.key_pem, "a.crt", "a.key").ok());
  auto mixed = server_context_from_pem(a.cert_pem, b.key_pem, "a.crt", "b.key");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().describe().find("b.key"), std::string::npos) << mixed.error().describe();
  EXPECT_NE(mixed.error().describe().find("a.crt"), std::string::npos) << mixed.error().describe();
  EXPECT_EQ(mixed.error().describe().find("PRIVATE"), std::string::npos);
}

class CertDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hb-cert-dir-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const char* file, const std::string& text) {
    std::ofstream(dir_ + "/" + file, std::ios::binary | std::ios::trunc) << text;
  }
  std::string dir_;
};

TEST_F(CertDir, AGoodPairLoads) {
  const CertificatePem pem = self_signed_certificate({"localhost"}, 1h).or_throw();
  write(kTlsCertFile, pem.cert_pem);
  write(kTlsKeyFile, pem.key_pem);
  EXPECT_TRUE(server_context_from_dir(dir_).ok());
  EXPECT_TRUE(server_context_from_dir(dir_ + "/").ok());
}

TEST_F(CertDir, AMissingKeyIsRefusedNamingTheFileAndTheFix) {
  write(kTlsCertFile, self_signed_certificate({"localhost"}, 1h).or_throw().cert_pem);
  auto loaded = server_context_from_dir(dir_);
  ASSERT_FALSE(loaded.ok());
  const std::string why = loaded.error().describe();
  EXPECT_NE(why.find(dir_ + "/tls.key"), std::string::npos) << why;
  EXPECT_NE(why.find("kubernetes.io/tls"), std::string::npos) << why;
}

TEST_F(CertDir, AGarbageKeyOrCertificateIsRefusedNamingTheFile) {
  const CertificatePem pem = self_signed_certificate({"localhost"}, 1h).or_throw();
  write(kTlsCertFile, pem.cert_pem);
  write(kTlsKeyFile, "-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n");
  auto bad_key = server_context_from_dir(dir_);
  ASSERT_FALSE(bad_key.ok());
  EXPECT_NE(bad_key.error().describe().find(dir_ + "/tls.key: not a PEM private key"),
            std::string::npos)
      << bad_key.error().describe();
  write(kTlsCertFile, "not a certificate");
  write(kTlsKeyFile, pem.key_pem);
  auto bad_cert = server_context_from_dir(dir_);
  ASSERT_FALSE(bad_cert.ok());
  EXPECT_NE(bad_cert.error().describe().find(dir_ + "/tls.crt: not a PEM certificate"),
            std::string::npos)
      << bad_cert.error().describe();
}

}  // namespace
}  // namespace hb::http
