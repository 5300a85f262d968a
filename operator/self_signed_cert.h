// A self-signed server certificate made in memory with OpenSSL, for a TLS
// listener that was given no certificate (controller-runtime's secure
// metrics do the same): ECDSA P-256, SHA-256, every name as a
// subjectAltName and the first of at most 64 bytes (X.509's limit) as CN
// ("heartbeat-operator" when none is that short). Nothing is written to disk; the key PEM is only
// ever handed to the TLS context, never logged.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "kube/errors.h"

namespace hb::operator_ {

inline constexpr std::chrono::hours kSelfSignedValidity{24 * 365};
// notBefore is set this far back, so a client whose clock lags accepts it.
inline constexpr std::chrono::hours kSelfSignedBackdate{1};

struct CertificatePem {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8; never logged
};

// names: DNS names or IP addresses (an IP becomes an IP SAN); at least one.
kube::Result<CertificatePem> self_signed_certificate(const std::vector<std::string>& names,
                                                     std::chrono::seconds validity);

}  // namespace hb::operator_
