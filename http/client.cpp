// hb::http::make_client on Boost.Beast + OpenSSL (the server side is Beast
// too: http_server.cpp). Each request runs on its caller's thread: every
// kept-alive connection has an io_context of its own that only the thread
// holding the connection runs, and the stream's deadline timer bounds each
// step. One TLS context per client, so the CAs are read once, not on every
// connection; idle connections are kept per origin, a few and not for long.
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>

// clang-format off
// First: Boost.Asio's awaitable.hpp (C++20) uses std::exchange and does not
// include <utility>; without it a file built alone (no unity batch) fails.
#include <utility>
// clang-format on

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <limits>
#include <optional>

#include "http/http.h"
#include "http/url.h"

namespace hb::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

// A body reaches on_chunk in pieces of at most this (a watch event as soon
// as it lands: a read hands on whatever has arrived); a TLS record's most.
constexpr std::size_t kBodyPieceBytes = 16 * 1024;
// A body's announced Content-Length is reserved up front only up to this:
// the length is the server's word, and the body may still stop short.
constexpr std::uint64_t kReserveBodyBytesMax = 64 * 1024 * 1024;
// The status line and headers of an answer, else an error (a hostile server
// does not make the client buffer headers without end).
constexpr std::uint32_t kResponseHeadBytesMax = 64 * 1024;
// Idle kept-alive connections per origin, and how long one is kept: a
// server closes idle connections after a while of its own, and a request
// sent on one it just closed fails. More than a busy operator has in
// flight (`--workers`, 4 by default and up to 16 in the benchmarks, the
// informers' lists, the status rounds), so a saturated one does not make a
// TLS handshake per request; an idle one holds no TLS record buffers.
constexpr std::size_t kIdleConnectionsPerOriginMax = 32;
constexpr std::chrono::seconds kIdleConnectionSecondsMax{30};

// One connection to one origin, plain or TLS.
struct Connection {
  asio::io_context io;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;  // bytes read past what the parser has taken
  SteadyClock::time_point idle_since;

  beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }
  template <class Fn>
  void with_stream(Fn&& fn) {
    if (secure) {
      fn(*secure);
    } else {
      fn(*plain);
    }
  }
};

// Runs the operation `start` begins to its end on the connection's own
// io_context (the stream's deadline ends it too) and answers its error.
template <class Start>
error_code run(Connection& c, Start&& start) {
  error_code result = asio::error::operation_aborted;
  start([&result](error_code ec, auto&&...) { result = ec; });
  c.io.restart();
  c.io.run();
  return result;
}

// Where an exchange failed: a kept-alive connection the server had closed
// fails at the write or the head with nothing of an answer read.
enum class Stage { kConnect, kHandshake, kWrite, kHead, kBody };

struct Failure {
  Stage stage = Stage::kConnect;
  error_code ec;
  bool too_large = false;
};

bool closed_by_peer(const error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == ssl::error::stream_truncated;
}

bool is_ip_literal(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// A kept-alive connection the server closed (or wrote to unasked) reads as
// ready: it is not used again.
bool looks_closed(Connection& c) {
  pollfd p{c.lowest().socket().native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
}

std::unique_ptr<ssl::context> make_tls_context(const TlsOptions& tls) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->set_options(ssl::context::default_workarounds);
  // An idle connection gives its 34 KB of record buffers back.
  SSL_CTX_set_mode(ctx->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  if (!tls.ca_file.empty()) {
    ctx->load_verify_file(tls.ca_file);
  } else if (!tls.ca_pem.empty()) {
    ctx->add_certificate_authority(asio::buffer(tls.ca_pem.data(), tls.ca_pem.size()));
  } else {
    ctx->set_default_verify_paths();
  }
  if (!tls.client_cert_pem.empty()) {
    ctx->use_certificate_chain(
        asio::buffer(tls.client_cert_pem.data(), tls.client_cert_pem.size()));
  }
  if (!tls.client_key_pem.empty()) {
    ctx->use_private_key(asio::buffer(tls.client_key_pem.data(), tls.client_key_pem.size()),
                         ssl::context::pem);
  }
  ctx->set_verify_mode(tls.insecure_skip_verify ? ssl::verify_none : ssl::verify_peer);
  return ctx;
}

// A request whose URL or headers could end the request line or a header
// early is never written: the bytes after a CR LF would be a second request
// sent with the first one's credentials. The message names the problem,
// not the attacker's bytes.
void refuse_unsafe(const Request& r) {
  std::optional<std::string> problem = url_problem(r.url);
  for (std::size_t i = 0; !problem && i < r.headers.size(); ++i) {
    problem = header_problem(r.headers[i].first, r.headers[i].second);
  }
  if (!problem &&
      !std::all_of(r.method.begin(), r.method.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    problem = "the method is not uppercase letters";
  }
  if (problem) {
    throw TransportError(TransportError::Kind::kOther,
                         "request refused before sending: " + *problem);
  }
}

// The request as Beast writes it; its body is the caller's, not a copy.
bhttp::request<bhttp::span_body<const char>> make_wire_request(const Request& r, const Url& url) {
  bhttp::request<bhttp::span_body<const char>> out;
  const bhttp::verb verb = bhttp::string_to_verb(r.method);
  if (verb == bhttp::verb::unknown) {
    out.method_string(r.method);
  } else {
    out.method(verb);
  }
  out.target(url.target);
  out.version(11);
  out.set(bhttp::field::host, url.host_header);
  for (const auto& [name, value] : r.headers) out.set(name, value);
  const bool carries_body =
      !r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH";
  if (carries_body && out.find(bhttp::field::content_type) == out.end()) {
    out.set(bhttp::field::content_type, "application/json");
  }
  out.body() = beast::span<const char>(r.body.data(), r.body.size());
  out.prepare_payload();
  return out;
}

using Parser = bhttp::response_parser<bhttp::buffer_body>;

// Names lower-cased; a repeated header's values joined with ", ".
std::map<std::string, std::string> lower_headers(const Parser& parser) {
  std::map<std::string, std::string> out;
  for (const auto& field : parser.get()) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto [it, inserted] = out.emplace(std::move(name), std::string(field.value()));
    if (!inserted) it->second.append(", ").append(field.value().data(), field.value().size());
  }
  return out;
}

// Reads the body after its head and hands each piece to `on_piece` as it
// arrives, until the body ends or on_piece returns false (`stopped`).
// `arm` sets the deadline before each read.
template <class Arm>
error_code read_body(Connection& c, Parser& parser, const ChunkHandler& on_piece, Arm&& arm,
                     bool& stopped) {
  std::unique_ptr<char[]> piece(new char[kBodyPieceBytes]);
  while (!parser.is_done()) {
    parser.get().body().data = piece.get();
    parser.get().body().size = kBodyPieceBytes;
    arm();
    error_code ec = run(c, [&](auto handler) {
      c.with_stream([&](auto& s) { bhttp::async_read_some(s, c.buffer, parser, handler); });
    });
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) return ec;
    const std::size_t n = kBodyPieceBytes - parser.get().body().size;
    if (n > 0 && !on_piece(std::string_view(piece.get(), n))) {
      stopped = true;
      return {};
    }
  }
  return {};
}

// While it lives, a cancel closes the connection's socket on the thread
// running its io_context: the read or write waiting on it ends at once.
// Taken off the source when it ends, however the attempt ends (an on_chunk
// that throws too), so a long-lived source gathers no dead callbacks.
class CloseOnCancel {
 public:
  CloseOnCancel(std::shared_ptr<CancelSource> source, const std::shared_ptr<Connection>& c)
      : source_(std::move(source)) {
    if (!source_) return;
    // Weak, and the posted close holds no owner: a close that never runs
    // (the request ended first) must not keep its connection alive in a cycle.
    id_ = source_->add([weak = std::weak_ptr<Connection>(c)] {
      if (auto held = weak.lock()) {
        asio::post(held->io, [raw = held.get()] { raw->lowest().close(); });
      }
    });
  }
  ~CloseOnCancel() {
    if (id_ != 0) source_->remove(id_);
  }
  CloseOnCancel(const CloseOnCancel&) = delete;
  CloseOnCancel& operator=(const CloseOnCancel&) = delete;

 private:
  std::shared_ptr<CancelSource> source_;
  uint64_t id_ = 0;
};

// One request on one connection, start to end. The answer, or where and why
// it failed.
class Exchange {
 public:
  Exchange(Connection& c, const Url& url, const Request& request, const ChunkHandler* on_chunk)
      : c_(c), url_(url), request_(request), on_chunk_(on_chunk) {}

  // Connects, and makes the TLS handshake when the connection was made
  // with a TLS stream (its context came with it).
  std::optional<Failure> connect(SteadyClock::time_point deadline) {
    c_.lowest().expires_at(deadline);
    tcp::resolver resolver(c_.io);
    error_code ec;
    const auto endpoints = resolver.resolve(url_.host, url_.port, ec);
    if (!ec) {
      ec = run(c_, [&](auto handler) { c_.lowest().async_connect(endpoints, handler); });
    }
    if (ec) return Failure{Stage::kConnect, ec};
    if (!c_.secure) return std::nullopt;
    SSL* ssl_handle = c_.secure->native_handle();
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_handle);
    if (is_ip_literal(url_.host)) {
      X509_VERIFY_PARAM_set1_ip_asc(param, url_.host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl_handle, url_.host.c_str());
      X509_VERIFY_PARAM_set1_host(param, url_.host.c_str(), 0);
    }
    ec = run(c_,
             [&](auto handler) { c_.secure->async_handshake(ssl::stream_base::client, handler); });
    if (ec) return Failure{Stage::kHandshake, ec};
    return std::nullopt;
  }

  // Writes the request, reads the answer. On success `response_` holds it.
  std::optional<Failure> send(SteadyClock::time_point deadline) {
    c_.lowest().expires_at(deadline);
    auto wire = make_wire_request(request_, url_);
    error_code ec = run(c_, [&](auto handler) {
      c_.with_stream([&](auto& s) { bhttp::async_write(s, wire, handler); });
    });
    if (ec) return Failure{Stage::kWrite, ec};
    parser_.header_limit(kResponseHeadBytesMax);
    // The caller's bound is checked as the body comes.
    parser_.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (request_.method == "HEAD") parser_.skip(true);
    ec = run(c_, [&](auto handler) {
      c_.with_stream([&](auto& s) { bhttp::async_read_header(s, c_.buffer, parser_, handler); });
    });
    if (ec) return Failure{Stage::kHead, ec};
    response_.status = static_cast<int>(parser_.get().result_int());
    response_.headers = lower_headers(parser_);
    return read_answer_body(deadline);
  }

  // Whether the connection may carry the next request.
  bool reusable() const {
    return !stopped_ && parser_.is_done() && parser_.keep_alive() && c_.buffer.size() == 0;
  }
  Response take_response() { return std::move(response_); }

 private:
  std::optional<Failure> read_answer_body(SteadyClock::time_point deadline) {
    const bool in_pieces =
        on_chunk_ != nullptr && response_.status >= 200 && response_.status <= 299;
    error_code ec;
    if (in_pieces) {
      // The timeout is now the longest silence between two pieces.
      const auto silence = request_.timeout;
      ec = read_body(
          c_, parser_, *on_chunk_, [&] { c_.lowest().expires_after(silence); }, stopped_);
      return ec ? std::optional<Failure>(Failure{Stage::kBody, ec}) : std::nullopt;
    }
    const std::size_t limit = request_.body_bytes_max;
    const auto announced = parser_.content_length();
    if (limit > 0 && announced && *announced > limit) return Failure{Stage::kBody, {}, true};
    if (announced && *announced <= kReserveBodyBytesMax) response_.body.reserve(*announced);
    bool over = false;
    const ChunkHandler append = [&](std::string_view piece) {
      response_.body.append(piece);
      over = limit > 0 && response_.body.size() > limit;
      return !over;
    };
    ec = read_body(
        c_, parser_, append, [&] { c_.lowest().expires_at(deadline); }, stopped_);
    if (over) return Failure{Stage::kBody, {}, true};
    return ec ? std::optional<Failure>(Failure{Stage::kBody, ec}) : std::nullopt;
  }

  Connection& c_;
  const Url& url_;
  const Request& request_;
  const ChunkHandler* on_chunk_;
  Parser parser_;
  Response response_;
  bool stopped_ = false;
};

class BeastClient final : public Client {
 public:
  explicit BeastClient(ClientOptions options) : options_(std::move(options)) {
    if (options_.ca_description.empty()) {
      options_.ca_description = !options_.tls.ca_file.empty()  ? options_.tls.ca_file
                                : !options_.tls.ca_pem.empty() ? "inline certificate-authority-data"
                                                               : "system CAs";
    }
  }

  Response send(const Request& request) override { return exchange(request, nullptr); }
  Response stream(const Request& request, const ChunkHandler& on_chunk) override {
    return exchange(request, &on_chunk);
  }
  Response send_in_pieces(const Request& request, const ChunkHandler& on_chunk) override {
    return exchange(request, &on_chunk);
  }

 private:
  struct Held {
    std::shared_ptr<Connection> connection;
    bool reused = false;
  };

  Response exchange(const Request& request, const ChunkHandler* on_chunk);
  std::optional<Failure> attempt(Held& held, const Url& url, const Request& request,
                                 const ChunkHandler* on_chunk, SteadyClock::time_point deadline,
                                 std::optional<Response>& answer, bool& reusable);
  Held hold(const Url& url, const Request& request);
  void give_back(const std::string& origin, std::shared_ptr<Connection> connection);
  ssl::context& tls_context(const Url& url, const Request& request);
  [[noreturn]] void fail(const Request& request, const Url& url, const Failure& failure,
                         bool cancelled) const;

  ClientOptions options_;
  std::mutex mutex_;
  std::unique_ptr<ssl::context> tls_;  // made at the first https request
  std::map<std::string, std::vector<std::shared_ptr<Connection>>> idle_;  // by origin
};

ssl::context& BeastClient::tls_context(const Url& url, const Request& request) {
  std::lock_guard lock(mutex_);
  if (tls_) return *tls_;
  try {
    tls_ = make_tls_context(options_.tls);
  } catch (const std::exception& e) {
    throw TransportError(TransportError::Kind::kTls,
                         "TLS with " + url.origin +
                             " failed (trusted CA: " + options_.ca_description + "): " + e.what() +
                             " (" + request.method + " " + request.url + ")");
  }
  return *tls_;
}

BeastClient::Held BeastClient::hold(const Url& url, const Request& request) {
  {
    std::lock_guard lock(mutex_);
    auto it = idle_.find(url.origin);
    while (it != idle_.end() && !it->second.empty()) {
      std::shared_ptr<Connection> c = std::move(it->second.back());
      it->second.pop_back();
      if (SteadyClock::now() - c->idle_since < kIdleConnectionSecondsMax && !looks_closed(*c)) {
        return {std::move(c), true};
      }
    }
  }
  auto c = std::make_shared<Connection>();
  if (url.tls) {
    c->secure.emplace(c->io, tls_context(url, request));
  } else {
    c->plain.emplace(c->io);
  }
  return {std::move(c), false};
}

void BeastClient::give_back(const std::string& origin, std::shared_ptr<Connection> connection) {
  connection->buffer.shrink_to_fit();
  connection->idle_since = SteadyClock::now();
  std::lock_guard lock(mutex_);
  auto& idle = idle_[origin];
  if (idle.size() < kIdleConnectionsPerOriginMax) idle.push_back(std::move(connection));
}

std::optional<Failure> BeastClient::attempt(Held& held, const Url& url, const Request& request,
                                            const ChunkHandler* on_chunk,
                                            SteadyClock::time_point deadline,
                                            std::optional<Response>& answer, bool& reusable) {
  Exchange exchange(*held.connection, url, request, on_chunk);
  if (!held.reused) {
    if (auto failed = exchange.connect(deadline)) return failed;
  }
  if (auto failed = exchange.send(deadline)) return failed;
  reusable = exchange.reusable();
  answer = exchange.take_response();
  return std::nullopt;
}

Response BeastClient::exchange(const Request& request, const ChunkHandler* on_chunk) {
  refuse_unsafe(request);
  const std::optional<Url> url = parse_url(request.url);
  if (!url) {
    throw TransportError(TransportError::Kind::kOther,
                         request.method + " " + request.url + ": not an http:// or https:// URL");
  }
  const auto deadline = SteadyClock::now() + request.timeout;
  auto is_cancelled = [&] { return request.cancel && request.cancel->cancelled(); };
  for (int tries = 1;; ++tries) {
    if (is_cancelled()) fail(request, *url, {}, true);
    Held held = hold(*url, request);
    std::optional<Response> answer;
    bool reusable = false;
    std::optional<Failure> failed;
    {
      const CloseOnCancel close_on_cancel(request.cancel, held.connection);
      failed = attempt(held, *url, request, on_chunk, deadline, answer, reusable);
    }
    if (!failed) {
      // Only once its cancel callback is gone (a late one would close the
      // socket under the next request) and it never ran.
      if (reusable && !is_cancelled()) give_back(url->origin, std::move(held.connection));
      return std::move(*answer);
    }
    const bool stale = held.reused && replayable_method(request.method) &&
                       (failed->stage == Stage::kWrite || failed->stage == Stage::kHead) &&
                       closed_by_peer(failed->ec);
    if (!stale || tries > 1 || is_cancelled()) fail(request, *url, *failed, is_cancelled());
  }
}

void BeastClient::fail(const Request& request, const Url& url, const Failure& failure,
                       bool cancelled) const {
  using Kind = TransportError::Kind;
  const std::string what = request.method + " " + request.url;
  if (cancelled) throw TransportError(Kind::kCancelled, what + ": cancelled");
  if (failure.too_large) {
    throw TransportError(Kind::kTooLarge, what + ": the answer's body is over " +
                                              std::to_string(request.body_bytes_max) +
                                              " bytes, the most this caller takes");
  }
  if (failure.ec == beast::error::timeout) {
    throw TransportError(Kind::kTimeout, what + ": no answer within " +
                                             std::to_string(request.timeout.count()) + " ms");
  }
  if (failure.stage == Stage::kHandshake ||
      failure.ec.category() == asio::error::get_ssl_category()) {
    throw TransportError(Kind::kTls, "TLS with " + url.origin +
                                         " failed (trusted CA: " + options_.ca_description +
                                         "): " + failure.ec.message() + " (" + what + ")");
  }
  throw TransportError(Kind::kConnect, what + ": " + failure.ec.message());
}

}  // namespace

std::unique_ptr<Client> make_client(const ClientOptions& options) {
  return std::make_unique<BeastClient>(options);
}

}  // namespace hb::http
