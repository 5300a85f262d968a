// The Agent pass's API writes: one method per kind of call the pass makes
// to the API server, each making that one call (or a create and the read
// that settles its AlreadyExists) and deciding nothing. The reconciler
// decides what to write and calls these; the real implementation also
// remembers each written object (read-your-writes overlay) and counts the
// write, and a unit test passes a fake that records the calls.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "controllers/runtime/metrics.h"
#include "controllers/shell/write_overlay.h"
#include "kube/client.h"
#include "kube/errors.h"

namespace hb::controllers {

// Labels of heartbeat_api_writes_total{kind}: every kind of write the reconciler makes.
inline constexpr const char* kWriteRunCreate = "run_create";
inline constexpr const char* kWriteRunAdopt = "run_adopt";
inline constexpr const char* kWriteJobCreate = "job_create";
// A Job made before its run, handed to the run once it is made (run_after_job.h).
inline constexpr const char* kWriteJobHandOver = "job_handover";
inline constexpr const char* kWriteContextCreate = "context_create";
inline constexpr const char* kWriteRunStatus = "run_status";
inline constexpr const char* kWriteRunLabel = "run_label";
inline constexpr const char* kWriteAgentStatus = "agent_status";
inline constexpr const char* kWriteRunDelete = "run_delete";
inline constexpr const char* kWriteJobDelete = "job_delete";
inline constexpr const char* kWriteEvent = "event";
inline constexpr const char* kWriteAgentObjectCreate = "agent_object_create";
inline constexpr const char* kWriteAgentObjectMark = "agent_object_mark";  // once per Agent
// A Role or RoleBinding found naming an object someone else owns.
inline constexpr const char* kWriteAgentGrantDelete = "agent_grant_delete";
// The durable ledger's record of an agent (ledger_record.h), once per counted run.
inline constexpr const char* kWriteLedger = "ledger";
inline constexpr std::array<const char*, 15> kWriteKinds = {
    kWriteRunCreate,       kWriteRunAdopt,         kWriteJobCreate, kWriteJobHandOver,
    kWriteContextCreate,   kWriteRunStatus,        kWriteRunLabel,  kWriteAgentStatus,
    kWriteRunDelete,       kWriteJobDelete,        kWriteEvent,     kWriteAgentObjectCreate,
    kWriteAgentObjectMark, kWriteAgentGrantDelete, kWriteLedger};

// The read-your-writes overlay's kinds.
inline constexpr const char* kOverlayAgents = "agents";
inline constexpr const char* kOverlayRuns = "runs";
inline constexpr const char* kOverlayJobs = "jobs";

// Counts one write of `kind` and the request class it was sent at.
void count_api_write(Metrics& metrics, const char* kind);

// What a create found: the object this call made, or (AlreadyExists) the
// object of that name already there, whoever owns it.
struct CreatedOrFound {
  Json object;
  bool made = false;
};

class AgentApiWrites {
 public:
  virtual ~AgentApiWrites() = default;

  // HeartbeatRuns. An AlreadyExists from create_run is the caller's to settle.
  virtual kube::Result<Json> create_run(const std::string& ns, const Json& run) = 0;
  virtual kube::Result<CreatedOrFound> create_or_find_run(const std::string& ns,
                                                          const Json& run) = 0;
  // Merge patches of the run's metadata: taking a kubectl-made run for an
  // Agent, and the label of a final phase.
  virtual kube::Result<Json> adopt_run(const std::string& ns, const std::string& name,
                                       const Json& patch) = 0;
  virtual kube::Result<Json> label_run(const std::string& ns, const std::string& name,
                                       const Json& patch) = 0;
  virtual kube::Result<Json> patch_run_status(const std::string& ns, const std::string& name,
                                              const Json& patch) = 0;
  // Deletes in the background; false when it was gone already.
  virtual kube::Result<bool> delete_run(const std::string& ns, const std::string& name) = 0;

  // A run's context ConfigMap and its Job.
  virtual kube::Result<CreatedOrFound> create_context(const std::string& ns,
                                                      const Json& config_map) = 0;
  virtual kube::Result<CreatedOrFound> create_job(const std::string& ns, const Json& job) = 0;
  virtual kube::Result<bool> delete_job(const std::string& ns, const std::string& name) = 0;
  // A merge patch of a Job made before its run: the run its controller.
  virtual kube::Result<Json> hand_over_job(const std::string& ns, const std::string& name,
                                           const Json& patch) = 0;

  // The Agent's status, conditional on the resourceVersion in `agent`.
  virtual kube::Result<Json> replace_agent_status(const std::string& ns, const std::string& name,
                                                  const Json& agent) = 0;

  // The per-agent objects (`kind`: agent_grants.h kKind*), the mark on the
  // Agent's Lease that all of them exist, and a Role or RoleBinding (kKindRoles,
  // kKindRoleBindings) deleted on condition of its uid; false when gone already.
  virtual kube::Result<CreatedOrFound> create_agent_object(const std::string& kind,
                                                           const std::string& ns,
                                                           const Json& object) = 0;
  virtual kube::Done mark_agent_objects_made(const std::string& ns, const std::string& lease_name,
                                             const Json& patch) = 0;
  virtual kube::Result<bool> delete_grant(const std::string& kind, const std::string& ns,
                                          const std::string& name, const std::string& uid) = 0;

  virtual kube::Done create_event(const std::string& ns, const Json& event) = 0;
};

// The writes over the API server: each success is remembered in `overlay`
// (created, patched and replaced runs, Jobs and Agents; deleted ones
// forgotten) and counted in `metrics`.
class KubeAgentApiWrites final : public AgentApiWrites {
 public:
  KubeAgentApiWrites(std::shared_ptr<kube::Client> client, WriteOverlay& overlay, Metrics& metrics);

  kube::Result<Json> create_run(const std::string& ns, const Json& run) override;
  kube::Result<CreatedOrFound> create_or_find_run(const std::string& ns, const Json& run) override;
  kube::Result<Json> adopt_run(const std::string& ns, const std::string& name,
                               const Json& patch) override;
  kube::Result<Json> label_run(const std::string& ns, const std::string& name,
                               const Json& patch) override;
  kube::Result<Json> patch_run_status(const std::string& ns, const std::string& name,
                                      const Json& patch) override;
  kube::Result<bool> delete_run(const std::string& ns, const std::string& name) override;
  kube::Result<CreatedOrFound> create_context(const std::string& ns,
                                              const Json& config_map) override;
  kube::Result<CreatedOrFound> create_job(const std::string& ns, const Json& job) override;
  kube::Result<bool> delete_job(const std::string& ns, const std::string& name) override;
  kube::Result<Json> hand_over_job(const std::string& ns, const std::string& name,
                                   const Json& patch) override;
  kube::Result<Json> replace_agent_status(const std::string& ns, const std::string& name,
                                          const Json& agent) override;
  kube::Result<CreatedOrFound> create_agent_object(const std::string& kind, const std::string& ns,
                                                   const Json& object) override;
  kube::Done mark_agent_objects_made(const std::string& ns, const std::string& lease_name,
                                     const Json& patch) override;
  kube::Result<bool> delete_grant(const std::string& kind, const std::string& ns,
                                  const std::string& name, const std::string& uid) override;
  kube::Done create_event(const std::string& ns, const Json& event) override;

 private:
  // Create, and on AlreadyExists the object of that name read instead.
  kube::Result<CreatedOrFound> create_or_find(const kube::Resource& resource, const std::string& ns,
                                              const Json& object);
  kube::Result<Json> patch_run(const std::string& ns, const std::string& name, const Json& patch,
                               const char* write_kind);
  kube::Result<bool> delete_in_background(const kube::Resource& resource, const std::string& ns,
                                          const std::string& name, const char* overlay_kind);
  // Delete; NotFound is done too (false: this call deleted nothing).
  kube::Result<bool> remove_if_present(const kube::Resource& resource, const std::string& ns,
                                       const std::string& name, const kube::DeleteOptions& options);

  std::shared_ptr<kube::Client> client_;
  WriteOverlay& overlay_;
  Metrics& metrics_;
};

}  // namespace hb::controllers
