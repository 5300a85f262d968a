// The project's one HTTP interface, Boost.Beast behind it for the client
// (client.cpp) and the server (server.cpp), so either could be replaced
// without touching the Kubernetes client, the controllers or the runner.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hb::http {

// Default limit on one request, connect to last byte.
inline constexpr std::chrono::seconds kRequestTimeoutDefault{30};

struct TlsOptions {
  std::string ca_file;  // PEM bundle, the only CAs trusted; with ca_pem empty too: system CAs
  std::string ca_pem;   // inline PEM, used when ca_file is empty
  std::string client_cert_pem;  // client certificate (mutual TLS)
  std::string client_key_pem;   // its private key; never logged
  bool insecure_skip_verify = false;
};

// Lets another thread abort requests in flight (a watch blocked on a quiet
// stream, say). Thread-safe; once cancelled it stays cancelled.
class CancelSource {
 public:
  void cancel();
  bool cancelled() const;
  // Runs fn on cancel (at once if already cancelled). Returns an id for remove().
  uint64_t add(std::function<void()> fn);
  void remove(uint64_t id);

 private:
  mutable std::mutex mutex_;
  bool cancelled_ = false;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::function<void()>> callbacks_;
};

struct Request {
  std::string method = "GET";
  std::string url;  // absolute: scheme://host[:port]/path?query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // For send(): the whole exchange. For stream(): connect and headers, and
  // then the longest silence allowed between two chunks of the body.
  std::chrono::milliseconds timeout = kRequestTimeoutDefault;
  std::shared_ptr<CancelSource> cancel;  // optional
  // For send(), and a stream()'s error body: a longer body stops the
  // transfer with a kTooLarge error. 0: no bound (the API server's pages).
  std::size_t body_bytes_max = 0;
};

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // empty for streamed bodies

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// The request never produced an HTTP response: refused connection, DNS, TLS
// handshake, timeout. The message names the URL (and the CA on TLS errors).
class TransportError : public std::runtime_error {
 public:
  // kTooLarge: the body passed Request::body_bytes_max.
  enum class Kind { kConnect, kTls, kTimeout, kCancelled, kTooLarge, kOther };
  TransportError(Kind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// Called with each piece of a streamed body as it arrives; return false to stop.
using ChunkHandler = std::function<bool(std::string_view chunk)>;

class Client {
 public:
  virtual ~Client() = default;
  // Sends the request and reads the whole body.
  virtual Response send(const Request& request) = 0;
  // Sends the request; for a 2xx answer, hands the body to on_chunk piece by
  // piece until the body ends, on_chunk returns false, or the timeout passes.
  // Non-2xx answers are read whole into Response::body instead.
  virtual Response stream(const Request& request, const ChunkHandler& on_chunk) = 0;
  // As stream(), for an answer that ends (a list page): its 2xx body goes to
  // on_chunk as it arrives instead of being held whole. This default reads
  // it whole and hands it on in one piece, which is all a test's fake needs.
  virtual Response send_in_pieces(const Request& request, const ChunkHandler& on_chunk) {
    Response answer = send(request);
    if (answer.status >= 200 && answer.status <= 299) {
      on_chunk(answer.body);
      answer.body.clear();
    }
    return answer;
  }
};

struct ClientOptions {
  TlsOptions tls;
  // Describes where the CA came from for error messages ("system CAs", a path).
  std::string ca_description;
};

std::unique_ptr<Client> make_client(const ClientOptions& options);

// --- server side: the operator's /metrics, /healthz, /readyz and wakeup ---

struct ServerRequest {
  std::string method;
  std::string path;                            // decoded path, no query
  std::string query;                           // raw query string
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string remote_address;  // the peer's IP, as the socket says (never a header)
};

struct ServerResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones (Retry-After, say)
};

using Handler = std::function<ServerResponse(const ServerRequest&)>;

// What one listener lets a client take. Every request path is reachable from
// the pod network, where the agent (an attacker already inside a Pod) lives:
// a slow or large request is refused with a status, never waited for.
struct ServerLimits {
  std::chrono::seconds head_timeout{10};  // request line + headers, else 408
  std::chrono::seconds body_timeout{10};  // the body after its head, else 408
  std::chrono::seconds idle_timeout{30};  // a kept-alive connection between requests
  std::chrono::seconds write_timeout{10};
  // TLS listeners: the handshake, from accept to done, else closed unanswered.
  std::chrono::seconds handshake_timeout{10};
  std::size_t head_bytes_max = 8 * 1024;   // else 431
  std::size_t body_bytes_max = 64 * 1024;  // declared or read, else 413 (before reading it)
  // Open at once. Past it a new connection closes the oldest idle one (not
  // in a handler or a write) of the source holding the most, so a flood of
  // idle connections never keeps a probe out; 503 + Retry-After only when
  // none is idle (or evict_idle_when_full is off).
  std::size_t connections_max = 256;
  // Open at once from one source IP; past it that source's own oldest idle
  // connection is closed (else the new one gets 503): one Pod cannot hold
  // the listener, and only hurts itself by trying.
  std::size_t connections_per_source_max = 64;
  bool evict_idle_when_full = true;
  std::size_t handler_threads = 4;  // handlers run here, never on the I/O thread
};

class Server {
 public:
  virtual ~Server() = default;
  // Stops accepting, closes every connection, waits for running handlers.
  virtual void stop() = 0;
  virtual int port() const = 0;  // the bound port (useful with port 0)
};

class ServerTls;  // http/server_tls.h

// Listens on address "host:port" with its own I/O thread and handler threads
// (Boost.Beast). Throws TransportError when the
// port cannot be bound. With `tls` it serves HTTPS only (a client that does
// not complete a TLS handshake gets no response); without, plain HTTP.
std::unique_ptr<Server> make_server(const std::string& address, Handler handler,
                                    const ServerLimits& limits = {},
                                    std::shared_ptr<ServerTls> tls = nullptr);

}  // namespace hb::http
