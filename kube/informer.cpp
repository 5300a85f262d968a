#include "kube/informer.h"

#include <spdlog/spdlog.h>

namespace hb::kube {
namespace {

// Raised inside the watch callback to end the stream and relist.
struct NeedRelist {
  std::string why;
};

}  // namespace

Informer::Informer(std::shared_ptr<Client> client, Resource resource, InformerOptions options)
    : client_(std::move(client)), resource_(std::move(resource)), options_(std::move(options)) {
  store_.set_dropped_string_members(options_.dropped_string_members);
}

Informer::~Informer() {
  stop();
}

void Informer::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void Informer::stop() {
  stopping_ = true;
  cancel_->cancel();
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Informer::wait_for_sync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [this] { return synced_.load() || stopping_.load(); }) &&
         synced_;
}

std::string Informer::last_resource_version() const {
  std::lock_guard lock(mutex_);
  return resource_version_;
}

bool Informer::sleep_unless_stopped(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !cv_.wait_for(lock, delay, [this] { return stopping_.load(); });
}

void Informer::list_and_replace() {
  ListOptions options;
  options.label_selector = options_.label_selector;
  options.limit = kListPageItemsMax;
  Json list = client_->list_all(resource_, options_.namespace_, options);
  ++stats_.lists;
  std::vector<Json> items;
  for (auto& item : list["items"]) items.push_back(std::move(item));
  store_.replace(std::move(items));
  {
    std::lock_guard lock(mutex_);
    resource_version_ = list["metadata"].value("resourceVersion", "");
    synced_ = true;
  }
  cv_.notify_all();
}

void Informer::watch_once() {
  WatchOptions options;
  options.label_selector = options_.label_selector;
  options.resource_version = last_resource_version();
  options.timeout_seconds = options_.watch_timeout_seconds;

  LineSplitter splitter;
  std::exception_ptr failure;
  std::optional<NeedRelist> relist;
  ++stats_.watches;
  client_->watch(
      resource_, options_.namespace_, options,
      [&](std::string_view chunk) {
        // Exceptions may not cross the transport; carry them out by hand.
        try {
          splitter.feed(chunk, [&](std::string_view line) {
            if (auto scanned = scan_watch_event(line)) {  // the fast path
              if (scanned->type != WatchEventType::kBookmark) {
                ++stats_.events;
                store_.apply(*scanned);
              }
              if (!scanned->resource_version.empty()) {
                std::lock_guard lock(mutex_);
                resource_version_ = std::string(scanned->resource_version);
              }
              return;
            }
            WatchEvent event = decode_watch_event(line);
            if (event.type == WatchEventType::kError) {
              ApiError error = error_from_status(event.object, "watch " + resource_.describe());
              if (error.kind() == ErrorKind::kGone) throw NeedRelist{error.what()};
              throw error;
            }
            std::string rv = event_resource_version(event);
            if (event.type != WatchEventType::kBookmark) {
              ++stats_.events;
              store_.apply(std::move(event));
            }
            if (!rv.empty()) {
              std::lock_guard lock(mutex_);
              resource_version_ = rv;
            }
          });
          return !stopping_;
        } catch (const NeedRelist& need) {
          relist = need;
        } catch (...) {
          failure = std::current_exception();
        }
        return false;
      },
      cancel_);
  if (relist) throw *relist;
  if (failure) std::rethrow_exception(failure);
}

void Informer::run() {
  bool need_list = true;
  const std::string what = resource_.describe();
  while (!stopping_) {
    try {
      if (need_list) {
        list_and_replace();
        need_list = false;
        spdlog::debug("informer listed resource={} objects={} resourceVersion={}", what,
                      store_.size(), last_resource_version());
      }
      watch_once();
      backoff_.reset();  // a watch that ended by the server's timeout is healthy
    } catch (const NeedRelist& need) {
      ++stats_.relists_after_gone;
      spdlog::info("informer relist resource={} reason=\"{}\"", what, need.why);
      need_list = true;
    } catch (const ApiError& e) {
      if (stopping_) break;
      ++stats_.errors;
      if (e.kind() == ErrorKind::kGone) {
        ++stats_.relists_after_gone;
        spdlog::info("informer relist resource={} reason=\"{}\"", what, e.what());
        need_list = true;
        continue;
      }
      auto delay = backoff_.next();
      spdlog::warn("informer error resource={} error=\"{}\" retry_in_ms={}", what, e.what(),
                   delay.count());
      sleep_unless_stopped(delay);
    } catch (const std::exception& e) {
      if (stopping_) break;
      ++stats_.errors;
      // A stream that broke mid-event cannot be trusted to resume cleanly.
      if (dynamic_cast<const WatchDecodeError*>(&e) != nullptr) need_list = true;
      auto delay = backoff_.next();
      spdlog::warn("informer error resource={} error=\"{}\" retry_in_ms={}", what, e.what(),
                   delay.count());
      sleep_unless_stopped(delay);
    }
  }
}

}  // namespace hb::kube
