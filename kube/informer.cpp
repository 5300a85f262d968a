#include "kube/informer.h"

#include <spdlog/spdlog.h>

namespace hb::kube {

Informer::Informer(std::shared_ptr<Client> client, Resource resource, InformerOptions options)
    : client_(std::move(client)), resource_(std::move(resource)), options_(std::move(options)) {
  store_.set_projection(options_.projection, options_.list_pass);
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

Done Informer::list_and_replace() {
  ListOptions options;
  options.label_selector = options_.label_selector;
  options.limit = kListPageItemsMax;
  // Each page is projected and encoded as it arrives (Store::Replacement).
  Store::Replacement replacement = store_.begin_replace();
  HB_TRY_ASSIGN(std::string version, client_->list_each(
                                         resource_, options_.namespace_, options,
                                         [this, &replacement](Json item) {
                                           replacement.add(std::move(item));
                                           ++stats_.items_listed;
                                         },
                                         [&] { replacement = store_.begin_replace(); }));
  ++stats_.lists;
  store_.replace(std::move(replacement));
  {
    std::lock_guard lock(mutex_);
    resource_version_ = std::move(version);
    synced_ = true;
  }
  cv_.notify_all();
  return done();
}

void Informer::treat_as_absent(const Error& error) {
  if (!synced_ || store_.size() > 0) {
    spdlog::warn(
        "informer resource_absent resource={} error=\"{}\" action=\"running without it; "
        "install its CRD (crds/) and grant list/watch to use it\"",
        resource_.describe(), error.describe());
  }
  store_.replace({});
  {
    std::lock_guard lock(mutex_);
    resource_version_.clear();
    synced_ = true;
  }
  cv_.notify_all();
}

Done Informer::watch_once() {
  WatchOptions options;
  options.label_selector = options_.label_selector;
  options.resource_version = last_resource_version();
  options.timeout_seconds = options_.watch_timeout_seconds;

  LineSplitter splitter;
  std::optional<Error> failure;  // what ended the stream from inside the handler
  ++stats_.watches;
  Done ended = client_->watch(
      resource_, options_.namespace_, options,
      [&](std::string_view chunk) {
        // Exceptions may not cross the transport; carry them out by hand.
        try {
          splitter.feed(chunk, [&](std::string_view line) {
            if (failure) return;
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
              failure = error_from_status(event.object, "watch " + resource_.describe());
              return;
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
          return !stopping_ && !failure;
        } catch (const std::exception& e) {
          // The decoder's WatchDecodeError (or a malformed object): a stream
          // that broke mid-event cannot be trusted to resume, so relist.
          Error broken;
          broken.kind = ErrorKind::kMalformed;
          broken.message = e.what();
          broken.context = "watch " + resource_.describe();
          failure = std::move(broken);
        }
        return false;
      },
      cancel_);
  if (failure) return *failure;
  return ended;
}

void Informer::run() {
  bool need_list = true;
  const std::string what = resource_.describe();
  while (!stopping_) {
    Done pass = need_list ? list_and_replace() : done();
    if (pass.ok() && need_list) {
      need_list = false;
      spdlog::debug("informer listed resource={} objects={} resourceVersion={}", what,
                    store_.size(), last_resource_version());
    }
    if (pass.ok()) pass = watch_once();
    if (pass.ok()) {
      backoff_.reset();  // a watch that ended by the server's timeout is healthy
      continue;
    }
    if (stopping_) break;
    const Error& error = pass.error();
    if (error.kind == ErrorKind::kGone) {
      ++stats_.relists_after_gone;
      spdlog::info("informer relist resource={} reason=\"{}\"", what, error.describe());
      need_list = true;
      continue;
    }
    const bool absent = error.kind == ErrorKind::kNotFound || error.kind == ErrorKind::kForbidden;
    if (need_list && options_.optional_resource && absent) {
      treat_as_absent(error);
      sleep_unless_stopped(kAbsentResourceRecheck);
      continue;
    }
    // A CRD deleted under the watch: the next list finds it absent.
    need_list =
        need_list || error.kind == ErrorKind::kMalformed || (options_.optional_resource && absent);
    ++stats_.errors;
    auto delay = backoff_.next();
    spdlog::warn("informer error resource={} error=\"{}\" retry_in_ms={}", what, error.describe(),
                 delay.count());
    sleep_unless_stopped(delay);
  }
}

}  // namespace hb::kube
