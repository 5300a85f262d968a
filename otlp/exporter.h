// Sends spans over OTLP/HTTP (JSON) from a thread of its own, so whoever
// records a span never waits for the network: offer() puts it on a bounded
// queue (full: dropped and counted) and returns. The thread exports what is
// queued every export interval, sooner once half the queue is used, and a
// last time at shutdown(), which waits at most one export timeout (the
// longer one when metrics are sent too) for the request in flight and the
// last pass together, then cancels what is still going. Every request is
// bounded by its signal's export timeout, connect to last byte, and its reply by
// kExportReplyBytesMax; a pass stops at its first failed request and
// drops the rest, so a hung, slow or hostile collector costs one timeout
// per pass and never more memory than the queue. The first failure is
// logged; every lost span is counted (stats()).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "http/http.h"
#include "otlp/encode.h"
#include "otlp/exporter_config.h"

namespace hb::otlp {

// One request's body at most; more spans go in more requests.
inline constexpr std::size_t kExportBytesMax = 512 * 1024;
// A collector's reply is read up to this much, then the request fails.
inline constexpr std::size_t kExportReplyBytesMax = 64 * 1024;

struct ExporterStats {
  std::uint64_t exported = 0;    // spans a collector accepted (2xx)
  std::uint64_t queue_full = 0;  // dropped at offer(): the queue was full or closed
  std::uint64_t failed = 0;      // dropped: their request failed or was not tried
  std::uint64_t too_large = 0;   // dropped: one span alone over kExportBytesMax
  std::uint64_t lost() const { return queue_full + failed + too_large; }
};

class Exporter {
 public:
  using LogWarning = std::function<void(const std::string&)>;
  // `scope`: the instrumentation scope's name on every request.
  Exporter(ExporterConfig config, Resource resource, std::string scope, http::Client& http,
           LogWarning log_warning);
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // Queues the span; false (and counted) when the queue is full or closed.
  // Never waits on the network or the exporter's thread's work.
  bool offer(Span span);
  // A metrics request body for config.metrics_url, sent with the next pass
  // (a later one replaces one not sent yet). Ignored without a metrics URL.
  void offer_metrics(std::string body);
  ExporterStats stats() const;
  // Exports what is queued, waiting at most the export timeout; later
  // offers are dropped. Idempotent.
  void shutdown();

 private:
  void run();
  bool wait_for_work(std::vector<Span>& spans, std::optional<std::string>& metrics);
  void export_spans(const std::vector<Span>& spans);
  bool post(const std::string& url, const std::string& body, std::chrono::milliseconds timeout);
  void failed(const std::string& url, const std::string& why);

  const ExporterConfig config_;
  const Resource resource_;
  const std::string scope_;
  http::Client& http_;
  LogWarning log_warning_;
  std::shared_ptr<http::CancelSource> cancel_ = std::make_shared<http::CancelSource>();
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Span> queue_;
  std::optional<std::string> metrics_;
  bool stopping_ = false;
  bool closed_ = false;  // the last pass took the queue: offers are dropped
  bool done_ = false;
  bool warned_ = false;  // only the exporter's thread reads and writes it
  std::atomic<std::uint64_t> exported_{0};
  std::atomic<std::uint64_t> queue_full_{0};
  std::atomic<std::uint64_t> failed_{0};
  std::atomic<std::uint64_t> too_large_{0};
  std::thread thread_;
};

}  // namespace hb::otlp
