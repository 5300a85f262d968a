#include "operator/leader_election.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <thread>

#include "kube/errors.h"

namespace hb::operator_ {

using controllers::Json;
using controllers::TimePoint;

std::string format_micro_time(TimePoint t) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(micros / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(micros % 1000000));
  return buffer;
}

std::string make_identity() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  std::random_device rd;
  char id[17];
  std::snprintf(id, sizeof id, "%016llx",
                static_cast<unsigned long long>((uint64_t{rd()} << 32) | rd()));
  return std::string(host) + "_" + id;
}

std::optional<Json> lease_update(const std::optional<Json>& lease, const LeaderElectionConfig& c,
                                 TimePoint now) {
  const std::string stamp = format_micro_time(now);
  if (!lease) {
    return Json{{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", c.lease_name}, {"namespace", c.lease_namespace}}},
                {"spec",
                 {{"holderIdentity", c.identity},
                  {"leaseDurationSeconds", c.lease_duration.count()},
                  {"acquireTime", stamp},
                  {"renewTime", stamp},
                  {"leaseTransitions", 0}}}};
  }
  const std::string holder = controllers::string_at(*lease, "spec/holderIdentity");
  const auto renewed = controllers::time_at(*lease, "spec/renewTime");
  const auto duration = std::chrono::seconds(
      controllers::int_at(*lease, "spec/leaseDurationSeconds").value_or(c.lease_duration.count()));
  const bool ours = holder == c.identity;
  const bool expired = holder.empty() || !renewed || *renewed + duration < now;
  if (!ours && !expired) return std::nullopt;
  Json updated = *lease;
  updated["spec"]["holderIdentity"] = c.identity;
  updated["spec"]["leaseDurationSeconds"] = c.lease_duration.count();
  updated["spec"]["renewTime"] = stamp;
  if (!ours) {
    updated["spec"]["acquireTime"] = stamp;
    updated["spec"]["leaseTransitions"] =
        controllers::int_at(*lease, "spec/leaseTransitions").value_or(0) + 1;
  }
  return updated;
}

LeaderElector::LeaderElector(std::shared_ptr<kube::Client> client, LeaderElectionConfig config)
    : client_(std::move(client)), config_(std::move(config)) {}

bool LeaderElector::try_acquire_or_renew() {
  std::optional<Json> lease;
  try {
    lease = client_->get(kube::resources::kLeases, config_.lease_namespace, config_.lease_name);
  } catch (const kube::ApiError& e) {
    if (e.kind() != kube::ErrorKind::kNotFound) throw;
  }
  auto update = lease_update(lease, config_, std::chrono::system_clock::now());
  if (!update) return false;
  if (!lease) {
    client_->create(kube::resources::kLeases, config_.lease_namespace, *update);
  } else {
    // resourceVersion in the body: a conflict means someone else wrote first.
    client_->replace(kube::resources::kLeases, config_.lease_namespace, config_.lease_name,
                     *update);
  }
  return true;
}

bool LeaderElector::acquire(const std::atomic<bool>& stop) {
  spdlog::info("event=leader_election_started lease={}/{} identity={}", config_.lease_namespace,
               config_.lease_name, config_.identity);
  while (!stop) {
    try {
      if (try_acquire_or_renew()) {
        spdlog::info("event=leader_elected lease={}/{} identity={}", config_.lease_namespace,
                     config_.lease_name, config_.identity);
        return true;
      }
    } catch (const std::exception& e) {
      spdlog::debug("event=leader_acquire_failed error=\"{}\"", e.what());
    }
    for (auto waited = std::chrono::milliseconds(0); waited < config_.retry_period && !stop;
         waited += std::chrono::milliseconds(100)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return false;
}

bool LeaderElector::hold(const std::atomic<bool>& stop) {
  auto last_renew = std::chrono::steady_clock::now();
  while (!stop) {
    for (auto waited = std::chrono::milliseconds(0); waited < config_.retry_period && !stop;
         waited += std::chrono::milliseconds(100)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (stop) break;
    bool renewed = false;
    try {
      renewed = try_acquire_or_renew();
    } catch (const std::exception& e) {
      spdlog::warn("event=leader_renew_failed error=\"{}\"", e.what());
    }
    const auto now = std::chrono::steady_clock::now();
    if (renewed) {
      last_renew = now;
    } else if (now - last_renew > config_.renew_deadline) {
      spdlog::error("event=leader_lost lease={}/{} identity={}", config_.lease_namespace,
                    config_.lease_name, config_.identity);
      return false;
    }
  }
  return true;
}

void LeaderElector::release() {
  try {
    Json lease =
        client_->get(kube::resources::kLeases, config_.lease_namespace, config_.lease_name);
    if (controllers::string_at(lease, "spec/holderIdentity") != config_.identity) return;
    lease["spec"]["holderIdentity"] = "";
    lease["spec"]["leaseDurationSeconds"] = 1;
    client_->replace(kube::resources::kLeases, config_.lease_namespace, config_.lease_name, lease);
    spdlog::info("event=leader_released lease={}/{}", config_.lease_namespace, config_.lease_name);
  } catch (const std::exception& e) {
    spdlog::warn("event=leader_release_failed error=\"{}\"", e.what());
  }
}

}  // namespace hb::operator_
