// hb::http::make_server on Boost.Beast: one I/O thread per listener reads and
// writes every connection without blocking; handlers run on the listener's
// own small thread pool (never the Kubernetes client's), so a slow handler
// never stops the reading, and a slow client never holds a handler thread.
// Every read has a deadline and a size cap. Connections are capped in all
// and per source IP; at a cap the oldest idle connection makes room
// (admit_connection), and only when none is idle is the new one answered
// 503 and closed. With a ServerTls the listener speaks only TLS: the
// handshake comes first, under its own deadline, while the connection
// counts as idle against the caps; a failed or late handshake is closed
// without a response.
#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <thread>
#include <unordered_map>

#include "http/http.h"
#include "http/server_tls.h"
#include "http/server_util.h"

namespace hb::http {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using TlsStream = asio::ssl::stream<tcp::socket>;

constexpr std::chrono::milliseconds kAcceptRetryDelay{100};  // after EMFILE and the like
constexpr int kRetryAfterSeconds = 1;
// The RefusalLog key of failed TLS handshakes (statuses are 100..599; 0 is
// the idle-eviction line).
constexpr int kHandshakeRefusalKey = -1;

// A connection as the listener's registry sees it: it can be evicted.
class Session {
 public:
  virtual ~Session() = default;
  // Closed to make room for a new connection (on the I/O thread); its
  // pending operation ends with operation_aborted and writes nothing.
  virtual void evict() = 0;
};

// A connection the listener counts against its caps.
struct Registered {
  std::weak_ptr<Session> session;
  std::string source;
  bool idle = false;
  std::chrono::steady_clock::time_point idle_since;
};

// What every connection of one listener shares; outlives them all (the
// listener destroys its io_context, and with it every session, first).
struct ListenerContext {
  std::string address;
  Handler handler;
  ServerLimits limits;
  asio::thread_pool* handlers = nullptr;
  std::shared_ptr<ServerTls> tls;  // null: plain HTTP
  RefusalLog refusals;
  // The open connections. A session's last reference may drop on a handler
  // thread, hence the lock (never held across I/O).
  std::mutex registry_mutex;
  std::unordered_map<const Session*, Registered> registry;

  void set_idle(const Session* s, bool idle) {
    std::lock_guard lock(registry_mutex);
    auto it = registry.find(s);
    if (it == registry.end()) return;
    it->second.idle = idle;
    if (idle) it->second.idle_since = std::chrono::steady_clock::now();
  }
  void unregister(const Session* s) {
    std::lock_guard lock(registry_mutex);
    registry.erase(s);
  }
};

ServerRequest to_server_request(bhttp::request<bhttp::string_body>&& in, const std::string& peer) {
  ServerRequest out;
  out.remote_address = peer;
  out.method = std::string(in.method_string());
  Target target = split_target(std::string_view(in.target().data(), in.target().size()));
  out.path = std::move(target.path);
  out.query = std::move(target.query);
  for (const auto& field : in) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.headers.emplace(std::move(name), std::string(field.value()));  // first one wins
  }
  out.body = std::move(in.body());
  return out;
}

ServerResponse call_handler(const Handler& handler, const ServerRequest& request) {
  try {
    return handler(request);
  } catch (const std::exception&) {
    ServerResponse out;
    out.status = 500;
    out.content_type = "application/json";
    out.body = refusal_body("internal error");
    return out;
  }
}

tcp::socket& tcp_of(tcp::socket& stream) {
  return stream;
}
tcp::socket& tcp_of(TlsStream& stream) {
  return stream.next_layer();
}

// One connection over Stream: tcp::socket (plain HTTP) or TlsStream.
template <class Stream>
class StreamSession final : public Session,
                            public std::enable_shared_from_this<StreamSession<Stream>> {
 public:
  // ssl: the TLS context this connection keeps (TlsStream only).
  StreamSession(tcp::socket socket, std::string source, ListenerContext& context,
                SslContext ssl = nullptr)
      : ssl_(std::move(ssl)),
        socket_(make_stream(std::move(socket), ssl_.get())),
        deadline_(socket_.get_executor()),
        context_(context),
        source_(std::move(source)) {}
  ~StreamSession() override { context_.unregister(this); }

  void start(bool over_capacity) {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      handshake(over_capacity);
    } else {
      serve(over_capacity);
    }
  }

  void evict() override {
    evicted_ = true;
    close();
  }

 private:
  using std::enable_shared_from_this<StreamSession<Stream>>::shared_from_this;
  using std::enable_shared_from_this<StreamSession<Stream>>::weak_from_this;

  static Stream make_stream(tcp::socket socket, asio::ssl::context* ssl) {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      return TlsStream(std::move(socket), *ssl);
    } else {
      return socket;
    }
  }

  void serve(bool over_capacity) {
    if (over_capacity) {
      refuse(503, "too many connections to " + context_.address + "; retry later");
      return;
    }
    read_head(context_.limits.head_timeout);
  }

  // Waiting for the client's hello is idle time: a silent connection may
  // be evicted for a new one, and is closed at the deadline either way.
  void handshake(bool over_capacity) {
    context_.set_idle(this, true);
    arm(limits().handshake_timeout);
    socket_.async_handshake(asio::ssl::stream_base::server,
                            [self = shared_from_this(), over_capacity](beast::error_code ec) {
                              self->on_handshake(ec, over_capacity);
                            });
  }

  void on_handshake(beast::error_code ec, bool over_capacity) {
    if (evicted_) return;
    const bool late = expired(ec);
    if (!ec) return serve(over_capacity);
    if (auto folded =
            context_.refusals.should_log(kHandshakeRefusalKey, std::chrono::steady_clock::now())) {
      spdlog::warn(
          "event=tls_handshake_failed address={} count={} reason=\"{}\"", context_.address, *folded,
          late ? "no handshake within " + std::to_string(limits().handshake_timeout.count()) + "s"
               : ec.message());
    }
    close();
  }

  const ServerLimits& limits() const { return context_.limits; }

  // A deadline cancels the operation in flight rather than closing the
  // socket, so a slow client still hears why (408) before the close.
  void arm(std::chrono::seconds timeout) {
    timed_out_ = false;
    deadline_.expires_after(timeout);
    deadline_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      tcp_of(self->socket_).cancel(ignored);
    });
  }

  bool expired(beast::error_code ec) {
    deadline_.cancel();
    return timed_out_ && ec == asio::error::operation_aborted;
  }

  void read_head(std::chrono::seconds timeout) {
    context_.set_idle(this, true);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits().head_bytes_max));
    parser_->body_limit(limits().body_bytes_max);
    arm(timeout);
    bhttp::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_head(ec); });
  }

  void on_head(beast::error_code ec) {
    if (evicted_) return;
    if (expired(ec)) {
      // Quiet between two requests is a client done with us; quiet inside a
      // head is a slow one.
      if (buffer_.size() == 0 && requests_ > 0) return close();
      return refuse(408, "the request head took longer than " +
                             std::to_string(limits().head_timeout.count()) + "s");
    }
    if (ec == bhttp::error::header_limit) {
      return refuse(
          431, "request head larger than " + std::to_string(limits().head_bytes_max) + " bytes");
    }
    // A declared Content-Length over the cap fails the head already.
    if (ec == bhttp::error::body_limit) return refuse_large_body();
    if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
        ec == asio::error::eof || ec == asio::error::connection_reset) {  // the client left
      return close();
    }
    if (ec) return refuse(400, "malformed request: " + ec.message());
    const auto declared = parser_->content_length();
    if (declared && *declared > limits().body_bytes_max) return refuse_large_body();
    arm(limits().body_timeout);
    bhttp::async_read(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (evicted_) return;
    if (expired(ec)) {
      return refuse(408, "the request body took longer than " +
                             std::to_string(limits().body_timeout.count()) + "s");
    }
    if (ec == bhttp::error::body_limit) return refuse_large_body();
    if (ec) return close();
    ++requests_;
    context_.set_idle(this, false);
    const bool keep_alive = parser_->keep_alive();
    auto request = std::make_shared<ServerRequest>(to_server_request(parser_->release(), source_));
    asio::post(*context_.handlers, [self = shared_from_this(), request, keep_alive] {
      ServerResponse out = call_handler(self->context_.handler, *request);
      asio::post(self->socket_.get_executor(), [self, out = std::move(out), keep_alive]() mutable {
        self->write(std::move(out), keep_alive);
      });
    });
  }

  void refuse_large_body() {
    refuse(413, "request body larger than " + std::to_string(limits().body_bytes_max) + " bytes");
  }

  void refuse(int status, const std::string& why) {
    if (auto folded = context_.refusals.should_log(status, std::chrono::steady_clock::now())) {
      spdlog::warn("event=http_refused address={} status={} count={} reason=\"{}\"",
                   context_.address, status, *folded, why);
    }
    ServerResponse out;
    out.status = status;
    out.content_type = "application/json";
    out.body = refusal_body(why);
    if (status == 503) out.headers.emplace_back("Retry-After", std::to_string(kRetryAfterSeconds));
    write(std::move(out), /*keep_alive=*/false);
  }

  void write(ServerResponse out, bool keep_alive) {
    context_.set_idle(this, false);
    auto response = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(out.status), 11);
    response->set(bhttp::field::content_type, out.content_type);
    for (const auto& [name, value] : out.headers) {
      if (!unsafe_header_value(name) && !unsafe_header_value(value)) response->set(name, value);
    }
    response->body() = std::move(out.body);
    response->keep_alive(keep_alive);
    response->prepare_payload();
    arm(limits().write_timeout);
    bhttp::async_write(socket_, *response,
                       [self = shared_from_this(), response](beast::error_code ec, std::size_t) {
                         self->deadline_.cancel();
                         if (ec || !response->keep_alive()) return self->close();
                         self->read_head(self->limits().idle_timeout);
                       });
  }

  // TLS ends without a close_notify: every response is framed by its
  // Content-Length, and a client that stopped reading cannot hold us.
  void close() {
    deadline_.cancel();
    beast::error_code ignored;
    tcp_of(socket_).shutdown(tcp::socket::shutdown_both, ignored);
    tcp_of(socket_).close(ignored);
  }

  const SslContext ssl_;  // outlives socket_
  Stream socket_;
  asio::steady_timer deadline_;
  bool timed_out_ = false;
  ListenerContext& context_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  int requests_ = 0;
  const std::string source_;
  bool evicted_ = false;
};

tcp::endpoint parse_endpoint(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    throw TransportError(TransportError::Kind::kConnect,
                         "cannot listen on \"" + address + "\": want host:port");
  }
  std::string host = address.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  beast::error_code ec;
  const auto ip = asio::ip::make_address(host, ec);
  int port = -1;
  try {
    port = std::stoi(address.substr(colon + 1));
  } catch (const std::exception&) {
  }
  if (ec || port < 0 || port > 65535) {
    throw TransportError(TransportError::Kind::kConnect,
                         "cannot listen on \"" + address + "\": want IP:port (0.0.0.0:8080)");
  }
  return {ip, static_cast<unsigned short>(port)};
}

class BeastServer final : public Server {
 public:
  BeastServer(const std::string& address, Handler handler, const ServerLimits& limits,
              std::shared_ptr<ServerTls> tls)
      : pool_(std::max<std::size_t>(limits.handler_threads, 1)),
        acceptor_(ioc_),
        retry_timer_(ioc_) {
    context_.address = address;
    context_.handler = std::move(handler);
    context_.limits = limits;
    context_.handlers = &pool_;
    context_.tls = std::move(tls);
    open(parse_endpoint(address));
    accept();
    io_thread_ = std::thread([this] { ioc_.run(); });
  }

  ~BeastServer() override { stop(); }

  void stop() override {
    if (stopped_.exchange(true)) return;
    asio::post(ioc_, [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
    });
    ioc_.stop();
    if (io_thread_.joinable()) io_thread_.join();
    pool_.join();
  }

  int port() const override { return port_; }

 private:
  void open(const tcp::endpoint& endpoint) {
    beast::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      throw TransportError(TransportError::Kind::kConnect,
                           "cannot listen on " + context_.address + ": " + ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
  }

  void accept() {
    acceptor_.async_accept(ioc_, [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (ec) {  // out of descriptors, say: try again shortly rather than spin
        retry_timer_.expires_after(kAcceptRetryDelay);
        retry_timer_.async_wait([this](beast::error_code wait_ec) {
          if (!wait_ec) accept();
        });
        return;
      }
      admit(std::move(socket));
      accept();
    });
  }

  // Registers the new connection, closing an idle one first when a cap is
  // reached (admit_connection); refused ones are counted until their 503 is
  // written. On the I/O thread, as every eviction.
  void admit(tcp::socket socket) {
    beast::error_code ec;
    const tcp::endpoint peer = socket.remote_endpoint(ec);
    std::string source = ec ? std::string("unknown") : peer.address().to_string();
    if (!context_.tls) {
      auto session =
          std::make_shared<StreamSession<tcp::socket>>(std::move(socket), source, context_);
      session->start(!register_session(session, source));
      return;
    }
    // The context current now; a connection keeps it (a reload swaps it).
    auto session = std::make_shared<StreamSession<TlsStream>>(std::move(socket), source, context_,
                                                              context_.tls->current());
    session->start(!register_session(session, source));
  }

  // Counts the connection, closing an idle one first when a cap is reached;
  // false when it is over capacity (it stays counted until it is closed).
  bool register_session(const std::shared_ptr<Session>& session, const std::string& source) {
    std::shared_ptr<Session> victim;
    bool admitted = true;
    {
      std::lock_guard lock(context_.registry_mutex);
      std::vector<OpenConnection> open;
      std::vector<const Session*> keys;
      open.reserve(context_.registry.size());
      keys.reserve(context_.registry.size());
      for (const auto& [key, r] : context_.registry) {
        open.push_back({r.source, r.idle, r.idle_since});
        keys.push_back(key);
      }
      const ServerLimits& l = context_.limits;
      const Admission a = admit_connection(open, source, l.connections_max,
                                           l.connections_per_source_max, l.evict_idle_when_full);
      admitted = a.admit;
      if (a.evict) {
        victim = context_.registry.at(keys[*a.evict]).session.lock();
        context_.registry.erase(keys[*a.evict]);  // its place is the new one's now
      }
      context_.registry.emplace(session.get(), Registered{session, source, false, {}});
    }
    if (victim) victim->evict();
    if (victim && context_.refusals.should_log(0, std::chrono::steady_clock::now())) {
      spdlog::warn("event=http_idle_connection_closed address={} reason=\"a cap was reached\"",
                   context_.address);
    }
    return admitted;
  }

  // Destroyed in reverse: the io_context (and every session) before the
  // context they point to.
  ListenerContext context_;
  asio::thread_pool pool_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_timer_;
  std::thread io_thread_;
  std::atomic<bool> stopped_{false};
  int port_ = 0;
};

}  // namespace

std::unique_ptr<Server> make_server(const std::string& address, Handler handler,
                                    const ServerLimits& limits, std::shared_ptr<ServerTls> tls) {
  return std::make_unique<BeastServer>(address, std::move(handler), limits, std::move(tls));
}

}  // namespace hb::http
