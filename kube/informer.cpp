#include "kube/informer.h"

#include <spdlog/spdlog.h>

#include "kube/watch_refusal.h"

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
                                         [&] { replacement = store_.begin_replace(); },
                                         [this](RefusalReason reason, std::string_view text) {
                                           // Left out of the replacement: a
                                           // stored copy goes as if deleted.
                                           refuse(reason, text, "list");
                                         }));
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
            if (!failure) handle_watch_line(line, failure);
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

void Informer::handle_watch_line(std::string_view line, std::optional<Error>& failure) {
  if (auto scanned = scan_watch_event(line)) {  // the fast path
    // The scanner takes no object deeper than the bound; the size is the
    // one part of refusal_for left to ask.
    const ObjectShape shape{scanned->object_text.size(), 1};
    if (const auto too = refusal_for(shape); too && scanned->type != WatchEventType::kBookmark) {
      refuse_watched(scanned->type, *too, scanned->object_text);
      return;
    }
    if (scanned->type != WatchEventType::kBookmark) {
      ++stats_.events;
      store_.apply(*scanned);
    }
    advance_resource_version(scanned->resource_version);
    return;
  }
  // The same decision the list takes, before the full decoder (which has
  // no depth bound) would take the object.
  if (const auto refused = refused_watch_object(line)) {
    refuse_watched(refused->type, refused->reason, refused->object_text);
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
  advance_resource_version(rv);
}

void Informer::advance_resource_version(std::string_view version) {
  if (version.empty()) return;
  std::lock_guard lock(mutex_);
  resource_version_ = std::string(version);
}

RefusedObject Informer::refuse(RefusalReason reason, std::string_view object_text,
                               const char* where) {
  RefusedObject refused = refused_object(resource_.describe(), reason, object_text);
  log_refusal(refused, where);
  ++stats_.objects_refused;
  if (options_.on_refused) options_.on_refused(refused);
  return refused;
}

// A stored copy of a refused object is dropped as if the object were
// deleted (readers see it go, as after a relist that refuses it; for an
// Agent the reconciler does what it does after a deletion), never kept
// stale: what the cache holds is what the API server holds now, or
// nothing. Kept, it would go on being acted on as a spec its author has
// since replaced (docs/operator.md).
void Informer::refuse_watched(WatchEventType type, RefusalReason reason,
                              std::string_view object_text) {
  PeekedMetadata metadata;
  if (type == WatchEventType::kDeleted) {
    metadata = peek_metadata(object_text);  // going anyway: nothing to report
  } else {
    metadata = refuse(reason, object_text, "watch").metadata;
  }
  ++stats_.events;
  if (const std::string key = store_key(metadata); !key.empty() && store_.contains(key)) {
    store_.remove(key);
  }
  advance_resource_version(metadata.resource_version);
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
