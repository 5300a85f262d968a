#include "tests/sim/transport.h"

#include <vector>

namespace hb::sim {

namespace {

struct Target {
  std::string resource, ns, name;
  bool status = false;
  std::map<std::string, std::string> query;
};

std::string url_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  parts.push_back(part);
  return parts;
}

// "/api/v1/namespaces/NS/RES/NAME/status?q" or "/apis/G/V/RES?q" (after the host).
Target parse_target(const std::string& url) {
  Target t;
  std::string rest = url.substr(url.find('/', url.find("://") + 3));
  if (auto q = rest.find('?'); q != std::string::npos) {
    for (const std::string& kv : split(rest.substr(q + 1), '&')) {
      const auto eq = kv.find('=');
      if (eq != std::string::npos) t.query[kv.substr(0, eq)] = url_decode(kv.substr(eq + 1));
    }
    rest = rest.substr(0, q);
  }
  std::vector<std::string> seg = split(rest.substr(1), '/');
  std::size_t i = seg[0] == "api" ? 2 : 3;  // past /api/v1 or /apis/g/v
  if (i < seg.size() && seg[i] == "namespaces" && i + 2 < seg.size()) {
    t.ns = seg[i + 1];
    i += 2;
  }
  if (i < seg.size()) t.resource = seg[i];
  if (i + 1 < seg.size()) t.name = seg[i + 1];
  t.status = i + 2 < seg.size() && seg[i + 2] == "status";
  return t;
}

http::Response to_response(const Answer& a, std::optional<int> retry_after = std::nullopt) {
  http::Response r;
  r.status = a.status;
  r.body = a.body.dump();
  r.headers["content-type"] = "application/json";
  if (retry_after) r.headers["retry-after"] = std::to_string(*retry_after);
  return r;
}

}  // namespace

bool Transport::draw(double p) {
  return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p;
}

std::chrono::milliseconds Transport::draw_latency() {
  using std::chrono::milliseconds;
  if (draw(rates_.slow)) {
    return milliseconds(std::uniform_int_distribution<int64_t>(kSlowRequestMin.count(),
                                                               kSlowRequestMax.count())(rng_));
  }
  if (rates_.latency_max.count() <= 0) return milliseconds(0);
  return milliseconds(std::uniform_int_distribution<int64_t>(0, rates_.latency_max.count())(rng_));
}

Answer Transport::apply(const http::Request& request) {
  const Target t = parse_target(request.url);
  const Json body = request.body.empty() ? Json() : Json::parse(request.body);
  if (request.method == "GET") {
    if (t.query.count("watch")) return status_answer(400, "BadRequest", "no watches here");
    if (t.name.empty()) {
      auto it = t.query.find("labelSelector");
      return server_.list(t.resource, t.ns, it == t.query.end() ? "" : it->second);
    }
    return server_.get(t.resource, t.ns, t.name);
  }
  if (request.method == "POST") return server_.create(actor_, t.resource, t.ns, body);
  if (request.method == "PUT")
    return server_.replace(actor_, t.resource, t.ns, t.name, body, t.status);
  if (request.method == "PATCH") {
    return server_.merge_patch(actor_, t.resource, t.ns, t.name, body, t.status);
  }
  if (request.method == "DELETE") {
    return server_.remove(actor_, t.resource, t.ns, t.name,
                          body.is_object() ? body : Json::object());
  }
  return status_answer(405, "MethodNotAllowed", request.method);
}

http::Response Transport::send(const http::Request& request) {
  ++stats_.requests;
  const bool write = request.method != "GET";
  if (outage_ && outage_(request)) {
    ++stats_.faults;
    return to_response(status_answer(503, "ServiceUnavailable", "simulated outage"));
  }
  if (draw(rates_.timeout)) {
    ++stats_.faults;
    throw http::TransportError(http::TransportError::Kind::kTimeout, "simulated timeout");
  }
  if (draw(rates_.server_error)) {
    ++stats_.faults;
    return to_response(status_answer(500, "InternalError", "simulated etcd failure"));
  }
  if (draw(rates_.throttled)) {
    ++stats_.faults;
    return to_response(status_answer(429, "TooManyRequests", "simulated throttling"), 1);
  }
  if (write && request.method != "POST" && request.method != "DELETE" && draw(rates_.conflict)) {
    ++stats_.faults;
    return to_response(status_answer(409, "Conflict", "simulated: the object has been modified"));
  }
  const std::chrono::milliseconds latency = draw_latency();
  if (elapse_) elapse_(latency / 2);
  const Answer answer = apply(request);
  if (elapse_) elapse_(latency - latency / 2);
  if (write && answer.ok() && draw(rates_.lost_answer)) {
    ++stats_.faults;
    throw http::TransportError(http::TransportError::Kind::kTimeout,
                               "simulated: applied, answer lost");
  }
  return to_response(answer);
}

http::Response Transport::stream(const http::Request&, const http::ChunkHandler&) {
  http::Response r = to_response(status_answer(400, "BadRequest", "watches are simulated feeds"));
  return r;
}

}  // namespace hb::sim
