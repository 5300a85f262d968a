// The metrics listener's certificate (--metrics-secure): the files of
// --metrics-cert-dir (tls.crt, tls.key: a mounted kubernetes.io/tls Secret,
// cert-manager's say), or without one a self-signed certificate made in
// memory at start, as controller-runtime's secure metrics do. A cert dir is
// read again when its files change: a bad new pair is a warning and the
// listener keeps the pair it has.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "kube/errors.h"
#include "operator/config.h"
#include "operator/tls_server_context.h"

namespace hb::operator_ {

// How often the cert dir's files are looked at for a change.
inline constexpr std::chrono::seconds kCertDirPollInterval{10};

// The TLS of the metrics listener: the cert dir's pair, or a self-signed one
// for config.metrics_cert_hosts. An error names the file and the fix.
kube::Result<std::shared_ptr<http::ServerTls>> metrics_tls(const Config& config);

// What a change of tls.crt or tls.key looks like from outside: inode (a
// Secret volume swaps a symlink), size and modification time of each.
struct CertDirStamp {
  ino_t cert_inode = 0, key_inode = 0;
  off_t cert_size = 0, key_size = 0;
  std::int64_t cert_mtime_ns = 0, key_mtime_ns = 0;
  bool operator==(const CertDirStamp&) const = default;
};
std::optional<CertDirStamp> cert_dir_stamp(const std::string& dir);

// Polls the cert dir every `interval` on a thread of its own and swaps the
// new pair into `tls` when the files changed and load; a pair that does not
// load is logged (event=metrics_cert_reload_failed) and the old one stays.
class CertDirReloader {
 public:
  CertDirReloader(std::string dir, std::shared_ptr<http::ServerTls> tls,
                  std::chrono::milliseconds interval = kCertDirPollInterval);
  ~CertDirReloader();
  CertDirReloader(const CertDirReloader&) = delete;
  CertDirReloader& operator=(const CertDirReloader&) = delete;
  // One look at the files (what the thread does each interval): true when a
  // new pair was loaded.
  bool poll();

 private:
  void run(std::chrono::milliseconds interval);

  const std::string dir_;
  const std::shared_ptr<http::ServerTls> tls_;
  std::mutex poll_mutex_;             // one poll at a time
  std::optional<CertDirStamp> seen_;  // guarded by poll_mutex_
  std::mutex mutex_;                  // guards stopping_
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hb::operator_
