#include "bench/operator/capacity_node.h"

#include "api/run_result.h"
#include "controllers/model/json_util.h"
#include "controllers/model/names.h"
#include "tests/sim/node.h"

namespace hb::bench {

namespace {

using controllers::name_of;
using controllers::namespace_of;

// Tokens every runner reports (a typical three-call heartbeat).
constexpr int64_t kInputTokens = 12000, kOutputTokens = 900;
constexpr double kInputCentsPerMillion = 15, kOutputCentsPerMillion = 60;

std::string annotation(const sim::Json& object, const char* key) {
  const sim::Json* annotations = controllers::find_path(object, "metadata/annotations");
  if (annotations == nullptr || !annotations->is_object()) return {};
  return annotations->value(key, std::string());
}

std::string result_message(const std::string& run) {
  api::RunResult result;
  result.stop_reason = "done";
  result.input_tokens = kInputTokens;
  result.output_tokens = kOutputTokens;
  result.cost_cents =
      (kInputTokens * kInputCentsPerMillion + kOutputTokens * kOutputCentsPerMillion) / 1e6;
  result.llm_calls = 3;
  result.tool_calls = 2;
  result.action_tool_calls = 2;
  result.iterations = 3;
  result.output = "capacity heartbeat of " + run;
  return api::render_result(result);
}

}  // namespace

void CapacityNode::read_changes(sim::TimePoint now) {
  const sim::ChangeLog& jobs = server_.changes("jobs");
  jobs_at_ = std::max(jobs_at_, jobs.begin());
  for (; jobs_at_ < jobs.end(); ++jobs_at_) {
    const sim::Change& c = jobs.at(jobs_at_);
    if (c.type != "ADDED") continue;
    due_.emplace(now + times_.pod_create, Due{Step::kMakePod, c.ns, name_of(c.object)});
  }
  const sim::ChangeLog& pods = server_.changes("pods");
  pods_at_ = std::max(pods_at_, pods.begin());
  for (; pods_at_ < pods.end(); ++pods_at_) {  // a deleted Pod goes after its grace
    const sim::Change& c = pods.at(pods_at_);
    if (c.type != "MODIFIED" || !c.object["metadata"].contains("deletionTimestamp")) continue;
    due_.emplace(now + times_.pod_delete_grace, Due{Step::kFinalize, c.ns, name_of(c.object)});
  }
}

void CapacityNode::step(sim::TimePoint now) {
  read_changes(now);
  while (!due_.empty() && due_.begin()->first <= now) {
    const Due due = due_.begin()->second;
    due_.erase(due_.begin());
    perform(due, now);
    read_changes(now);
  }
}

std::optional<sim::TimePoint> CapacityNode::next_due() const {
  if (due_.empty()) return std::nullopt;
  return due_.begin()->first;
}

void CapacityNode::perform(const Due& due, sim::TimePoint now) {
  if (due.step == Step::kMakePod) return make_pod(due.ns, due.name, now);
  if (due.step == Step::kFinalize) {
    running_since_.erase(due.ns + "/" + due.name);
    return server_.finalize_pod(due.ns, due.name);
  }
  const sim::Json* pod = server_.peek("pods", due.ns, due.name);
  if (pod == nullptr || (*pod)["metadata"].contains("deletionTimestamp")) return;
  if (due.step == Step::kStart) {
    running_since_[due.ns + "/" + due.name] = now;
    server_.node_update("pods", sim::pod_running(*pod, now));
    due_.emplace(now, Due{Step::kBeat, due.ns, due.name});
    due_.emplace(now + times_.work, Due{Step::kEnd, due.ns, due.name});
    return;
  }
  if (due.step == Step::kBeat) return beat(*pod, now);
  end(*pod, now);
}

void CapacityNode::make_pod(const std::string& ns, const std::string& job_name,
                            sim::TimePoint now) {
  const sim::Json* job = server_.peek("jobs", ns, job_name);
  if (job == nullptr) return;
  const sim::Json started = sim::job_started(*job, now);
  const sim::Answer made = server_.create(sim::Actor::kNode, "pods", ns, sim::pod_for_job(started));
  server_.node_update("jobs", started);
  if (!made.ok()) return;
  ++pods_made_;
  due_.emplace(now + times_.pod_start, Due{Step::kStart, ns, name_of(made.body)});
}

void CapacityNode::beat(const sim::Json& pod, sim::TimePoint now) {
  const auto since = running_since_.find(namespace_of(pod) + "/" + name_of(pod));
  if (since == running_since_.end() || now >= since->second + times_.work) return;
  const std::string agent = annotation(pod, controllers::kAnnotationAgentName);
  const std::string run = annotation(pod, controllers::kAnnotationRunName);
  server_.merge_patch(sim::Actor::kRunner, "leases", namespace_of(pod),
                      controllers::lease_name_for_agent(agent),
                      sim::lease_beat_patch(run, kInputTokens / 2, kOutputTokens / 2, now), false);
  due_.emplace(now + times_.beat_every, Due{Step::kBeat, namespace_of(pod), name_of(pod)});
}

void CapacityNode::end(const sim::Json& pod, sim::TimePoint now) {
  const std::string key = namespace_of(pod) + "/" + name_of(pod);
  const auto since = running_since_.find(key);
  if (since == running_since_.end()) return;
  const std::string run = annotation(pod, controllers::kAnnotationRunName);
  server_.node_update("pods", sim::pod_terminated(pod, since->second, 0, result_message(run), now));
  running_since_.erase(since);
  const std::string job_name =
      controllers::string_at(pod, std::string("metadata/labels/") + controllers::kLabelJobName);
  if (const sim::Json* job = server_.peek("jobs", namespace_of(pod), job_name)) {
    server_.node_update("jobs", sim::job_settled(*job, true));
  }
}

}  // namespace hb::bench
