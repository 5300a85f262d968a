#include "kube/informer.h"

#include <spdlog/spdlog.h>

#include "api/hb_assert.h"
#include "kube/watch_refusal.h"

namespace hb::kube {

Informer::Informer(std::shared_ptr<Client> client, Resource resource, InformerOptions options)
    : client_(std::move(client)), resource_(std::move(resource)), options_(std::move(options)) {
  store_.set_projection(options_.projection, options_.list_pass, options_.text_cut);
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
  return state_.resource_version;
}

bool Informer::sleep_unless_stopped(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !cv_.wait_for(lock, delay, [this] { return stopping_.load(); });
}

Result<std::string> Informer::list_and_replace() {
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
  return version;
}

void Informer::treat_as_absent(const Error& error) {
  if (!synced_ || store_.size() > 0) {
    spdlog::warn(
        "informer resource_absent resource={} error=\"{}\" action=\"running without it; "
        "install its CRD (crds/) and grant list/watch to use it\"",
        resource_.describe(), error.describe());
  }
  store_.replace({});
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
        Done fed = splitter.feed(chunk, [&](std::string_view line) {
          if (!failure) handle_watch_line(line, failure);
        });
        // A stream that broke mid-event cannot be trusted to resume: relist.
        if (!fed.ok() && !failure) failure = std::move(fed).error();
        return !stopping_ && !failure;
      },
      cancel_);
  if (failure) {
    if (failure->context.empty()) failure->context = "watch " + resource_.describe();
    return *failure;
  }
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
  Result<WatchEvent> decoded = decode_watch_event(line);
  if (!decoded.ok()) {
    failure = std::move(decoded).error();
    return;
  }
  WatchEvent event = std::move(decoded).value();
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
  state_.resource_version = std::string(version);
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

Result<WatcherOutcome> Informer::perform(WatcherAction action) {
  if (action == WatcherAction::kWatch) {
    HB_TRY(watch_once());
    return WatcherOutcome{};
  }
  HB_TRY_ASSIGN(std::string version, list_and_replace());
  return WatcherOutcome{std::nullopt, std::move(version)};
}

void Informer::take_step(const WatcherStep& step, const Error* error) {
  const std::string what = resource_.describe();
  if (step.absent) treat_as_absent(*error);
  {
    std::lock_guard lock(mutex_);
    state_ = step.state;
    if (step.listed || step.absent) synced_ = true;
  }
  if (step.listed || step.absent) cv_.notify_all();
  if (step.listed) {
    spdlog::debug("informer listed resource={} objects={} resourceVersion={}", what, store_.size(),
                  step.state.resource_version);
  }
  if (step.reset_backoff) backoff_.reset();
  if (step.gone) {
    ++stats_.relists_after_gone;
    spdlog::info("informer relist resource={} reason=\"{}\"", what, error->describe());
  }
  if (step.wait == WatcherWait::kAbsentRecheck) sleep_unless_stopped(kAbsentResourceRecheck);
  if (step.wait != WatcherWait::kBackoff) return;
  HB_ASSERT(step.count_error && error != nullptr);
  ++stats_.errors;
  const auto delay = backoff_.next();
  spdlog::warn("informer error resource={} error=\"{}\" retry_in_ms={}", what, error->describe(),
               delay.count());
  sleep_unless_stopped(delay);
}

void Informer::run() {
  while (!stopping_) {
    WatcherState state;
    {
      std::lock_guard lock(mutex_);
      state = state_;
    }
    Result<WatcherOutcome> outcome = perform(watcher_action(state.phase));
    if (!outcome.ok() && stopping_) break;
    {
      // A watch moves the resourceVersion while it runs, ended well or not.
      std::lock_guard lock(mutex_);
      state.resource_version = state_.resource_version;
    }
    const Error* error = outcome.ok() ? nullptr : &outcome.error();
    const WatcherOutcome taken = outcome.ok() ? outcome.value() : WatcherOutcome{error->kind, ""};
    take_step(step_watcher(state, taken, options_.optional_resource), error);
  }
}

}  // namespace hb::kube
