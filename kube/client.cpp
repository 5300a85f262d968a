#include "kube/client.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <string_view>

#include "api/hb_assert.h"
#include "api/object_names.h"

namespace hb::kube {
namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kMergePatch = "application/merge-patch+json";

std::string query_of(const ListOptions& o) {
  std::string q;
  auto add = [&](const std::string& key, const std::string& value) {
    if (value.empty()) return;
    q += (q.empty() ? "?" : "&") + key + "=" + url_encode(value);
  };
  add("labelSelector", o.label_selector);
  add("fieldSelector", o.field_selector);
  if (o.limit > 0) add("limit", std::to_string(o.limit));
  add("continue", o.continue_token);
  add("resourceVersion", o.resource_version);
  return q;
}

std::string describe(const std::string& verb, const Resource& r, const std::string& ns,
                     const std::string& name) {
  std::string out = verb + " " + r.describe();
  const std::string shown_ns = api::quote_untrusted(ns), shown_name = api::quote_untrusted(name);
  if (!ns.empty() && !name.empty()) return out + " " + shown_ns + "/" + shown_name;
  if (!ns.empty() || !name.empty()) out += " " + (ns.empty() ? shown_name : shown_ns);
  return out;
}

// A namespace or name that cannot be one path segment is never sent: the
// server would read an encoded '/' as a separator, and "." or ".." as a
// step up the path (client-go refuses the same).
std::optional<Error> refused_target(const std::string& ns, const std::string& name,
                                    const std::string& context) {
  for (const auto& [what, segment] : {std::pair{"namespace", &ns}, std::pair{"name", &name}}) {
    if (std::optional<std::string> problem = path_segment_problem(*segment)) {
      Error refused;
      refused.kind = ErrorKind::kBadRequest;
      refused.message = std::string("not sent: the ") + what + " \"" +
                        api::quote_untrusted(*segment) + "\" " + *problem;
      refused.context = context;
      return refused;
    }
  }
  return std::nullopt;
}

Error gave_way_error(const std::string& context) {
  Error gave_way;
  gave_way.kind = ErrorKind::kGaveWay;
  gave_way.message = "not sent: gave way to a heartbeat that came due while it waited";
  gave_way.context = context;
  return gave_way;
}

}  // namespace

Client::Client(ClusterConfig config, ClientOptions options, std::shared_ptr<http::Client> transport)
    : config_(std::move(config)),
      options_(options),
      transport_(std::move(transport)),
      tokens_(config_),
      limiter_(options.qps > 0
                   ? std::optional<PriorityTokenBucket>(std::in_place, options.qps, options.burst,
                                                        std::chrono::steady_clock::now())
                   : std::nullopt) {
  if (!transport_) {
    http::ClientOptions http_options;
    http_options.tls = config_.tls;
    http_options.ca_description = config_.ca_description;
    transport_ = std::shared_ptr<http::Client>(http::make_client(http_options));
  }
}

// Token bucket: qps tokens a second, at most `burst` saved up, handed to
// the best waiter first (dispatch, then lifecycle, then bookkeeping). A
// thread whose ticket another thread granted picks it up from served_.
// False: the request gave way (its give-way time came while it waited).
bool Client::wait_for_token() {
  if (!limiter_) return true;
  const RequestPriority priority = current_request_priority();
  // A dispatch is what the others give way to: it never does.
  const GiveWayTime give_way =
      priority.cls == RequestClass::kDispatch ? std::nullopt : current_give_way_time();
  std::unique_lock lock(limiter_mutex_);
  const PriorityTokenBucket::Ticket ticket = limiter_->enqueue(priority);
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    const std::vector<PriorityTokenBucket::Ticket> granted = limiter_->grant(now);
    served_.insert(granted.begin(), granted.end());
    if (!granted.empty()) limiter_changed_.notify_all();
    if (served_.erase(ticket) > 0) return true;
    if (give_way && now >= *give_way) {
      const bool withdrawn = limiter_->withdraw(ticket);
      HB_ASSERT(withdrawn);  // not served, so still in line
      return false;
    }
    const std::optional<std::chrono::steady_clock::time_point> at = limiter_->next_token_at();
    HB_ASSERT(at.has_value());  // our own ticket still waits
    limiter_changed_.wait_until(lock, give_way ? std::min(*at, *give_way) : *at);
  }
}

http::Request Client::make_request(const std::string& method, const std::string& path) {
  http::Request req;
  req.method = method;
  req.url = config_.server + path;
  req.timeout = options_.timeout;
  req.headers.emplace_back("Accept", kJson);
  req.headers.emplace_back("User-Agent", options_.user_agent);
  std::string token = tokens_.token();
  if (!token.empty()) {
    req.headers.emplace_back("Authorization", "Bearer " + token);
  } else if (!config_.username.empty()) {
    req.headers.emplace_back("Authorization",
                             "Basic " + base64_encode(config_.username + ":" + config_.password));
  }
  return req;
}

Result<http::Response> Client::call(const std::string& verb, const std::string& method,
                                    const std::string& path, const std::string& body,
                                    const std::string& content_type, const std::string& context,
                                    const http::ChunkHandler* on_body_piece) {
  std::atomic<uint64_t>* counter = verb == "get"      ? &counts_.get
                                   : verb == "list"   ? &counts_.list
                                   : verb == "create" ? &counts_.create
                                   : verb == "update" ? &counts_.update
                                   : verb == "patch"  ? &counts_.patch
                                                      : &counts_.remove;
  // One retry after a 401: a rotated service-account token is re-read.
  for (int attempt = 0;; ++attempt) {
    if (!wait_for_token()) return gave_way_error(context);
    // After the rate limiter's wait: leadership may have ended during it.
    const bool write = counter != &counts_.get && counter != &counts_.list;
    if (write && write_gate_ && !write_gate_()) {
      Error refused;
      refused.kind = ErrorKind::kNotLeader;
      refused.message = "not the leader: " + verb + " refused";
      refused.context = context;
      return refused;
    }
    // Which class each request went out in: how a saturated budget was spent.
    spdlog::debug("event=api_request class={} verb={} request=\"{}\"",
                  request_class_name(current_request_priority().cls), verb, context);
    http::Request req = make_request(method, path);
    if (!content_type.empty()) req.headers.emplace_back("Content-Type", content_type);
    req.body = body;
    ++*counter;
    http::Response resp;
    try {
      resp =
          on_body_piece ? transport_->send_in_pieces(req, *on_body_piece) : transport_->send(req);
    } catch (const http::TransportError& failure) {  // the transport's one exception
      return error_from_transport(failure, context);
    }
    if (resp.status == 401 && attempt == 0 && !config_.token_file.empty()) {
      tokens_.invalidate();
      continue;
    }
    if (resp.status < 200 || resp.status > 299) {
      return error_from_response(resp.status, resp.header("retry-after"), resp.body, context);
    }
    return resp;
  }
}

namespace {
Error malformed(int status, const std::string& context,
                const std::string& problem = "answer is not JSON") {
  Error error;
  error.kind = ErrorKind::kMalformed;
  error.code = status;
  error.message = problem;
  error.context = context;
  return error;
}

Result<Json> parse_body(Result<http::Response> answer, const std::string& context) {
  if (!answer.ok()) return std::move(answer).error();
  Json parsed = Json::parse(answer.value().body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) return parsed;
  return malformed(answer.value().status, context);
}

}  // namespace

Result<Json> Client::get(const Resource& r, const std::string& ns, const std::string& name) {
  std::string ctx = describe("get", r, ns, name);
  if (auto refused = refused_target(ns, name, ctx)) return *std::move(refused);
  return parse_body(call("get", "GET", r.path(ns, name), "", "", ctx), ctx);
}

Result<Json> Client::list(const Resource& r, const std::string& ns, const ListOptions& options) {
  std::string ctx = describe("list", r, ns, "");
  if (auto refused = refused_target(ns, "", ctx)) return *std::move(refused);
  return parse_body(call("list", "GET", r.path(ns) + query_of(options), "", "", ctx), ctx);
}

Result<Json> Client::list_all(const Resource& r, const std::string& ns, ListOptions options) {
  Json items = Json::array();
  Result<std::string> version = list_each(
      r, ns, std::move(options), [&items](Json item) { items.push_back(std::move(item)); },
      [&items] { items = Json::array(); });
  if (!version.ok()) return std::move(version).error();
  Json out = Json::object();
  out["items"] = std::move(items);
  out["metadata"]["resourceVersion"] = std::move(version.value());
  return out;
}

// The items are parsed one at a time as the page arrives (ListPageSplitter);
// one that is refused (too deep, too large) or does not parse is skipped
// and reported: one bad object never fails the page (object_refusal.h).
Result<ListPageEnd> Client::list_page(const std::string& path, const std::string& context,
                                      const std::function<void(Json item)>& on_item,
                                      const RefusedTextHandler& on_refused) {
  ListPageSplitter splitter(
      [&on_item, &on_refused](std::string_view text) {
        Json item = Json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (item.is_discarded()) {
          on_refused(RefusalReason::kMalformed, text);
          return true;
        }
        on_item(std::move(item));
        return true;
      },
      [&on_refused](RefusalReason reason, std::string_view kept_text) {
        on_refused(reason, kept_text);
        return true;
      });
  const http::ChunkHandler feed = [&splitter](std::string_view piece) {
    return splitter.feed(piece);
  };
  Result<http::Response> answer = call("list", "GET", path, "", "", context, &feed);
  if (!answer.ok()) return std::move(answer).error();
  std::optional<ListPageEnd> end = splitter.finish();
  if (!end) return malformed(answer.value().status, context, "list page: " + splitter.problem());
  return std::move(*end);
}

Result<std::string> Client::list_each(const Resource& r, const std::string& ns, ListOptions options,
                                      const std::function<void(Json item)>& on_item,
                                      const std::function<void()>& on_restart,
                                      const RefusedTextHandler& on_refused) {
  const std::string ctx = describe("list", r, ns, "");
  const RefusedTextHandler report_refused =
      on_refused ? on_refused : [&r](RefusalReason reason, std::string_view text) {
        log_refusal(refused_object(r.describe(), reason, text), "list");
      };
  if (auto refused = refused_target(ns, "", ctx)) return *std::move(refused);
  bool restarted = false;
  std::optional<std::string> snapshot;
  while (true) {
    Result<ListPageEnd> page =
        list_page(r.path(ns) + query_of(options), ctx, on_item, report_refused);
    if (!page.ok()) {
      // The continue token expired; start once more from the beginning.
      if (!page.is(ErrorKind::kGone) || options.continue_token.empty() || restarted) {
        return std::move(page).error();
      }
      restarted = true;
      options.continue_token.clear();
      snapshot.reset();
      on_restart();
      continue;
    }
    // The first page's resourceVersion is the snapshot every page belongs to.
    if (!snapshot) snapshot = std::move(page.value().resource_version);
    if (page.value().continue_token.empty()) break;
    options.continue_token = std::move(page.value().continue_token);
  }
  return std::move(*snapshot);
}

Result<Json> Client::create(const Resource& r, const std::string& ns, const Json& object) {
  std::string ctx = describe("create", r, ns, object.value("/metadata/name"_json_pointer, ""));
  if (auto refused = refused_target(ns, "", ctx)) return *std::move(refused);
  return parse_body(call("create", "POST", r.path(ns), object.dump(), kJson, ctx), ctx);
}

Result<Json> Client::replace(const Resource& r, const std::string& ns, const std::string& name,
                             const Json& object) {
  std::string ctx = describe("update", r, ns, name);
  if (auto refused = refused_target(ns, name, ctx)) return *std::move(refused);
  return parse_body(call("update", "PUT", r.path(ns, name), object.dump(), kJson, ctx), ctx);
}

Result<Json> Client::merge_patch(const Resource& r, const std::string& ns, const std::string& name,
                                 const Json& patch) {
  std::string ctx = describe("patch", r, ns, name);
  if (auto refused = refused_target(ns, name, ctx)) return *std::move(refused);
  return parse_body(call("patch", "PATCH", r.path(ns, name), patch.dump(), kMergePatch, ctx), ctx);
}

Result<Json> Client::replace_status(const Resource& r, const std::string& ns,
                                    const std::string& name, const Json& object) {
  std::string ctx = describe("update status of", r, ns, name);
  if (auto refused = refused_target(ns, name, ctx)) return *std::move(refused);
  return parse_body(call("update", "PUT", r.path(ns, name) + "/status", object.dump(), kJson, ctx),
                    ctx);
}

Result<Json> Client::merge_patch_status(const Resource& r, const std::string& ns,
                                        const std::string& name, const Json& patch) {
  std::string ctx = describe("patch status of", r, ns, name);
  if (auto refused = refused_target(ns, name, ctx)) return *std::move(refused);
  return parse_body(
      call("patch", "PATCH", r.path(ns, name) + "/status", patch.dump(), kMergePatch, ctx), ctx);
}

Result<Json> Client::remove(const Resource& r, const std::string& ns, const std::string& name,
                            const DeleteOptions& options) {
  Json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (!options.precondition_uid.empty()) body["preconditions"]["uid"] = options.precondition_uid;
  if (!options.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  }
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  std::string ctx = describe("delete", r, ns, name);
  if (auto refused = refused_target(ns, name, ctx)) return *std::move(refused);
  return parse_body(call("remove", "DELETE", r.path(ns, name), body.dump(), kJson, ctx), ctx);
}

Done Client::watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                   const http::ChunkHandler& on_chunk, std::shared_ptr<http::CancelSource> cancel) {
  std::string path = r.path(ns) + "?watch=1";
  if (!options.label_selector.empty())
    path += "&labelSelector=" + url_encode(options.label_selector);
  if (!options.field_selector.empty())
    path += "&fieldSelector=" + url_encode(options.field_selector);
  if (!options.resource_version.empty()) {
    path += "&resourceVersion=" + url_encode(options.resource_version);
  }
  if (options.allow_bookmarks) path += "&allowWatchBookmarks=true";
  path += "&timeoutSeconds=" + std::to_string(options.timeout_seconds);
  std::string ctx = describe("watch", r, ns, "");
  if (auto refused = refused_target(ns, "", ctx)) return *std::move(refused);

  for (int attempt = 0;; ++attempt) {
    if (!wait_for_token()) return gave_way_error(ctx);
    http::Request req = make_request("GET", path);
    // Quiet streams are normal; allow silence up to the server's own timeout.
    req.timeout = std::chrono::seconds(options.timeout_seconds) + kWatchClientSlack;
    req.cancel = cancel;
    ++counts_.watch;
    http::Response resp;
    try {
      resp = transport_->stream(req, on_chunk);
    } catch (const http::TransportError& failure) {
      return error_from_transport(failure, ctx);
    }
    if (resp.status == 401 && attempt == 0 && !config_.token_file.empty()) {
      tokens_.invalidate();
      continue;
    }
    if (resp.status < 200 || resp.status > 299) {
      return error_from_response(resp.status, resp.header("retry-after"), resp.body, ctx);
    }
    return done();
  }
}

}  // namespace hb::kube
