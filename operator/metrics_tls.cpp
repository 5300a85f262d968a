#include "operator/metrics_tls.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "operator/self_signed_cert.h"

namespace hb::operator_ {

namespace {

std::string cert_dir_file(const std::string& dir, const char* file) {
  return dir.empty() || dir.back() == '/' ? dir + file : dir + "/" + file;
}

}  // namespace

kube::Result<std::shared_ptr<http::ServerTls>> metrics_tls(const Config& config) {
  if (!config.metrics_cert_dir.empty()) {
    HB_TRY_ASSIGN(http::SslContext context, server_context_from_dir(config.metrics_cert_dir));
    return std::make_shared<http::ServerTls>(std::move(context));
  }
  HB_TRY_ASSIGN(const CertificatePem pem,
                self_signed_certificate(config.metrics_cert_hosts,
                                        std::chrono::seconds(kSelfSignedValidity)));
  HB_TRY_ASSIGN(http::SslContext context,
                server_context_from_pem(pem.cert_pem, pem.key_pem, "self-signed certificate",
                                        "self-signed key"));
  return std::make_shared<http::ServerTls>(std::move(context));
}

std::optional<CertDirStamp> cert_dir_stamp(const std::string& dir) {
  struct stat cert {
  }, key{};
  if (::stat(cert_dir_file(dir, kTlsCertFile).c_str(), &cert) != 0 ||
      ::stat(cert_dir_file(dir, kTlsKeyFile).c_str(), &key) != 0) {
    return std::nullopt;
  }
  const auto ns = [](const timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  return CertDirStamp{cert.st_ino, key.st_ino,       cert.st_size,
                      key.st_size, ns(cert.st_mtim), ns(key.st_mtim)};
}

CertDirReloader::CertDirReloader(std::string dir, std::shared_ptr<http::ServerTls> tls,
                                 std::chrono::milliseconds interval)
    : dir_(std::move(dir)), tls_(std::move(tls)), seen_(cert_dir_stamp(dir_)) {
  thread_ = std::thread([this, interval] { run(interval); });
}

CertDirReloader::~CertDirReloader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool CertDirReloader::poll() {
  std::lock_guard poll_lock(poll_mutex_);
  const std::optional<CertDirStamp> now = cert_dir_stamp(dir_);
  if (!now || now == seen_) return false;  // gone (mid-swap, say): keep the pair
  seen_ = now;
  kube::Result<http::SslContext> loaded = server_context_from_dir(dir_);
  if (!loaded.ok()) {
    spdlog::warn("event=metrics_cert_reload_failed dir={} error=\"{}\" keeping=previous", dir_,
                 loaded.error().describe());
    return false;
  }
  tls_->replace(std::move(loaded).value());
  spdlog::info("event=metrics_cert_reloaded dir={}", dir_);
  return true;
}

void CertDirReloader::run(std::chrono::milliseconds interval) {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval, [this] { return stopping_; })) {
    lock.unlock();
    poll();
    lock.lock();
  }
}

}  // namespace hb::operator_
