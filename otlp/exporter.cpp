#include "otlp/exporter.h"

#include <algorithm>
#include <utility>

#include "api/hb_assert.h"

namespace hb::otlp {

Exporter::Exporter(ExporterConfig config, Resource resource, std::string scope, http::Client& http,
                   LogWarning log_warning)
    : config_(std::move(config)),
      resource_(std::move(resource)),
      scope_(std::move(scope)),
      http_(http),
      log_warning_(std::move(log_warning)) {
  HB_ASSERT(config_.queue_spans_max > 0);
  thread_ = std::thread([this] { run(); });
}

Exporter::~Exporter() {
  shutdown();
}

bool Exporter::offer(Span span) {
  {
    std::lock_guard lock(mutex_);
    if (!closed_ && queue_.size() < config_.queue_spans_max) {
      queue_.push_back(std::move(span));
      if (queue_.size() * 2 >= config_.queue_spans_max) wake_.notify_one();
      return true;
    }
  }
  queue_full_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void Exporter::offer_metrics(std::string body) {
  if (config_.metrics_url.empty()) return;
  std::lock_guard lock(mutex_);
  if (!closed_) metrics_ = std::move(body);
}

ExporterStats Exporter::stats() const {
  return {exported_.load(), queue_full_.load(), failed_.load(), too_large_.load()};
}

void Exporter::shutdown() {
  if (!thread_.joinable()) return;
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
    // One timeout for what is in flight and the last pass together; the
    // metrics timeout only counts when metrics are sent at all.
    const auto last_pass = config_.metrics_url.empty()
                               ? config_.export_timeout
                               : std::max(config_.export_timeout, config_.metrics_export_timeout);
    if (!wake_.wait_for(lock, last_pass, [this] { return done_; })) {
      cancel_->cancel();  // the request in flight ends now
    }
  }
  thread_.join();
}

// Waits for a pass and takes its work; false once the last pass is taken.
bool Exporter::wait_for_work(std::vector<Span>& spans, std::optional<std::string>& metrics) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, config_.export_interval,
                 [this] { return stopping_ || queue_.size() * 2 >= config_.queue_spans_max; });
  spans.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
  queue_.clear();
  metrics = std::exchange(metrics_, std::nullopt);
  closed_ = stopping_;
  return !closed_;
}

void Exporter::run() {
  for (bool more = true; more;) {
    std::vector<Span> spans;
    std::optional<std::string> metrics;
    more = wait_for_work(spans, metrics);
    export_spans(spans);
    if (metrics) post(config_.metrics_url, *metrics, config_.metrics_export_timeout);
  }
  std::lock_guard lock(mutex_);
  done_ = true;
  wake_.notify_all();
}

void Exporter::export_spans(const std::vector<Span>& spans) {
  if (spans.empty()) return;
  std::size_t too_large = 0;
  std::vector<Batch> batches =
      encode_batches(resource_, scope_, spans, kExportBytesMax, &too_large);
  too_large_.fetch_add(too_large, std::memory_order_relaxed);
  bool failing = false;
  for (const Batch& batch : batches) {
    // After a failure the pass gives up: one timeout per pass at most.
    failing = failing || !post(config_.traces_url, batch.body, config_.export_timeout);
    (failing ? failed_ : exported_).fetch_add(batch.spans, std::memory_order_relaxed);
  }
}

bool Exporter::post(const std::string& url, const std::string& body,
                    std::chrono::milliseconds timeout) {
  if (cancel_->cancelled()) return false;
  http::Request request;
  request.method = "POST";
  request.url = url;
  request.headers.emplace_back("Content-Type", "application/json");
  for (const auto& header : config_.headers) request.headers.push_back(header);
  request.body = body;
  request.timeout = timeout;
  request.cancel = cancel_;
  request.body_bytes_max = kExportReplyBytesMax;
  try {
    const http::Response response = http_.send(request);
    if (response.status >= 200 && response.status <= 299) return true;
    failed(url, "HTTP " + std::to_string(response.status));
  } catch (const std::exception& error) {
    failed(url, error.what());
  }
  return false;
}

void Exporter::failed(const std::string& url, const std::string& why) {
  if (warned_ || !log_warning_) return;
  warned_ = true;
  log_warning_("OTLP export to " + url + " failed (" + why +
               "); what it carried is dropped and later failures are only counted");
}

}  // namespace hb::otlp
