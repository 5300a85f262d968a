// A generic Kubernetes REST client: any group/version/resource as JSON.
// Nothing throws: every call returns a Result, the answer or an Error (the
// server's Status, no answer at all, a write refused by the write gate),
// each naming the request.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "http/http.h"
#include "kube/errors.h"
#include "kube/kubeconfig.h"
#include "kube/list_page_splitter.h"
#include "kube/priority_token_bucket.h"
#include "kube/resource.h"

namespace hb::kube {

using Json = nlohmann::json;

// client-go's defaults; configurable because the API server is the bottleneck.
inline constexpr double kClientQpsDefault = 20.0;
inline constexpr int kClientBurstDefault = 30;
// The server ends a watch after timeoutSeconds; the client waits a bit longer.
inline constexpr int kWatchTimeoutSecondsDefault = 290;
inline constexpr std::chrono::seconds kWatchClientSlack{30};

struct ClientOptions {
  double qps = kClientQpsDefault;  // <= 0 disables rate limiting
  int burst = kClientBurstDefault;
  std::chrono::milliseconds timeout = http::kRequestTimeoutDefault;
  std::string user_agent = "heartbeat-operator";
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;  // page size; 0 = server default (all)
  std::string continue_token;
  std::string resource_version;
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  int timeout_seconds = kWatchTimeoutSecondsDefault;
  bool allow_bookmarks = true;
};

struct DeleteOptions {
  std::string propagation_policy;  // "Background", "Foreground", "Orphan" or ""
  std::string precondition_uid;
  std::string precondition_resource_version;
  std::optional<int64_t> grace_period_seconds;
};

// Counts of requests sent, by verb, for benchmarks and /metrics.
struct RequestCounts {
  std::atomic<uint64_t> get{0}, list{0}, watch{0}, create{0}, update{0}, patch{0}, remove{0};
  uint64_t writes() const { return create + update + patch + remove; }
  uint64_t total() const { return get + list + watch + writes(); }
};

class Client {
 public:
  Client(ClusterConfig config, ClientOptions options = {},
         std::shared_ptr<http::Client> transport = nullptr);

  Result<Json> get(const Resource& r, const std::string& ns, const std::string& name);
  // One page; `metadata.continue` in the answer names the next.
  Result<Json> list(const Resource& r, const std::string& ns, const ListOptions& options = {});
  // Every page, merged: {"items": [...], "metadata": {"resourceVersion": ...}}.
  // A continue token that expires mid-way (410) restarts the list once from scratch.
  Result<Json> list_all(const Resource& r, const std::string& ns, ListOptions options = {});
  // The same, one item at a time: each is handed to `on_item` as it
  // arrives, so no more than an item is held parsed or as text. `on_restart`
  // is called before a restarted list hands out its first item again.
  // Returns the snapshot's resourceVersion. On an error, items already
  // handed on belong to a list that failed: the caller drops them.
  // An item too deep, too large or that does not parse (object_refusal.h)
  // is skipped and goes to `on_refused` with what was kept of its text
  // (null: it is logged); the page goes on.
  Result<std::string> list_each(const Resource& r, const std::string& ns, ListOptions options,
                                const std::function<void(Json item)>& on_item,
                                const std::function<void()>& on_restart,
                                const RefusedTextHandler& on_refused = nullptr);
  Result<Json> create(const Resource& r, const std::string& ns, const Json& object);
  // PUT; metadata.resourceVersion in the object makes it conditional (409 if stale).
  Result<Json> replace(const Resource& r, const std::string& ns, const std::string& name,
                       const Json& object);
  Result<Json> merge_patch(const Resource& r, const std::string& ns, const std::string& name,
                           const Json& patch);
  Result<Json> replace_status(const Resource& r, const std::string& ns, const std::string& name,
                              const Json& object);
  Result<Json> merge_patch_status(const Resource& r, const std::string& ns, const std::string& name,
                                  const Json& patch);
  Result<Json> remove(const Resource& r, const std::string& ns, const std::string& name,
                      const DeleteOptions& options = {});

  // Opens a watch and hands raw body chunks to on_chunk (kube/watch_decoder.h
  // splits them into lines and decodes each event).
  // Returns when the server ends the stream, on_chunk returns false or
  // `cancel` fires. A non-2xx answer is an Error (410 -> kGone).
  Done watch(const Resource& r, const std::string& ns, const WatchOptions& options,
             const http::ChunkHandler& on_chunk,
             std::shared_ptr<http::CancelSource> cancel = nullptr);

  // Checked before every write (create, replace, patch, delete): false
  // refuses it with ErrorKind::kNotLeader, before it is sent. Set before use.
  using WriteGate = std::function<bool()>;
  void set_write_gate(WriteGate gate) { write_gate_ = std::move(gate); }

  const ClusterConfig& config() const { return config_; }
  const RequestCounts& counts() const { return counts_; }

 private:
  Result<http::Response> call(const std::string& verb, const std::string& method,
                              const std::string& path, const std::string& body,
                              const std::string& content_type, const std::string& context,
                              const http::ChunkHandler* on_body_piece = nullptr);
  Result<ListPageEnd> list_page(const std::string& path, const std::string& context,
                                const std::function<void(Json item)>& on_item,
                                const RefusedTextHandler& on_refused);
  http::Request make_request(const std::string& method, const std::string& path);
  // Waits for the rate limiter under the calling thread's RequestPriority;
  // false when the request gave way (its GiveWayScope's time came first).
  [[nodiscard]] bool wait_for_token();

  ClusterConfig config_;
  ClientOptions options_;
  std::shared_ptr<http::Client> transport_;
  TokenSource tokens_;
  RequestCounts counts_;
  WriteGate write_gate_;

  std::mutex limiter_mutex_;
  std::condition_variable limiter_changed_;
  std::optional<PriorityTokenBucket> limiter_;    // none when qps <= 0
  std::set<PriorityTokenBucket::Ticket> served_;  // granted, not yet picked up
};

}  // namespace hb::kube
