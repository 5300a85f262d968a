// A finished run as the audit record: ownership by Agent incarnation, the
// charge and policies recorded at final, the audit line, retention.
#include "controllers/run/run_record.h"

#include <gtest/gtest.h>

#include "controllers/run/run_status.h"
#include "tests/unit/controllers/fixtures.h"

namespace hb::controllers {
namespace {

using namespace std::chrono_literals;

Json with_annotations(Json run, const Json& annotations) {
  run["metadata"]["annotations"] = annotations;
  return run;
}

// A finished, counted run as the API server returns it after the costRecorded write.
Json counted_run(const std::string& name, const std::string& finished_at) {
  Json r = run(name);
  r["metadata"]["uid"] = "run-uid-1";
  r["metadata"]["annotations"] = {{kAnnotationAgentUid, "uid-bot"},
                                  {kAnnotationPolicies, "team-a,team-b"}};
  r["spec"]["scheduledTime"] = "2024-05-01T12:05:00Z";
  r["status"] = {{"phase", "Succeeded"},
                 {"reason", "Completed"},
                 {"message", "secret-looking text never logged"},
                 {"output", "the model's output is not logged either"},
                 {"stopReason", "done"},
                 {"exitCode", 0},
                 {"startedAt", "2024-05-01T12:05:00Z"},
                 {"finishedAt", finished_at},
                 {"durationSeconds", 60},
                 {"usage",
                  {{"inputTokens", 1000},
                   {"outputTokens", 200},
                   {"costCents", 3.0},
                   {"llmCalls", 2},
                   {"toolCalls", 1},
                   {"iterations", 2}}},
                 {"charge", charge_record("openai", "gpt-4o-mini", kTestPricing, "agent", "")},
                 {"policies", {"team-a", "team-b"}},
                 {"costRecorded", true}};
  return r;
}

TEST(RunRecord, ARunBelongsToTheAgentIncarnationItsAnnotationNames) {
  const Json mine = with_annotations(run("r1"), {{kAnnotationAgentUid, "uid-bot"}});
  EXPECT_TRUE(run_of_agent(mine, "uid-bot"));
  EXPECT_FALSE(run_of_other_agent(mine, "uid-bot"));
  // A same-named Agent created again has another uid: the old run is an orphan.
  EXPECT_FALSE(run_of_agent(mine, "uid-bot-2"));
  EXPECT_TRUE(run_of_other_agent(mine, "uid-bot-2"));
  // Made with kubectl, not adopted yet: nobody's run, nobody's orphan.
  const Json bare = run("r2", "manual");
  EXPECT_FALSE(run_of_agent(bare, "uid-bot"));
  EXPECT_FALSE(run_of_other_agent(bare, "uid-bot"));
  // A run made before the annotation: its ownerReference says whose.
  Json legacy = run("r3");
  legacy["metadata"]["ownerReferences"] = {
      {{"apiVersion", "heartbeat.dev/v1alpha1"}, {"kind", "Agent"}, {"uid", "uid-old"}}};
  EXPECT_TRUE(run_of_agent(legacy, "uid-old"));
  EXPECT_TRUE(run_of_other_agent(legacy, "uid-bot"));
}

TEST(RunRecord, PoliciesAreStampedAsASortedListAndReadBack) {
  EXPECT_EQ(policies_annotation({"team-a", "team-b"}), "team-a,team-b");
  EXPECT_EQ(policies_annotation({}), "");
  EXPECT_EQ(stamped_policies(with_annotations(run("r1"), {{kAnnotationPolicies, "a,b"}})),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(stamped_policies(with_annotations(run("r1"), {{kAnnotationPolicies, ""}})),
            std::vector<std::string>{});
  EXPECT_FALSE(stamped_policies(run("r1")).has_value());
}

// The run's Job as the operator made it: controlled by the run, its
// template stamped with `policies`.
Json stamped_job(const Json& of_run, const std::string& policies) {
  Json j = job(name_of(of_run));
  j["metadata"]["uid"] = "job-uid-1";
  j["metadata"]["ownerReferences"] = {{{"apiVersion", "heartbeat.dev/v1alpha1"},
                                       {"kind", "HeartbeatRun"},
                                       {"name", name_of(of_run)},
                                       {"uid", string_at(of_run, "metadata/uid")},
                                       {"controller", true}}};
  j["spec"]["template"]["metadata"]["annotations"][kAnnotationPolicies] = policies;
  return j;
}

TEST(RunRecord, AdmittingPoliciesComeFromTheJobTemplateNotTheRunsAnnotation) {
  const auto known = [](const std::string& p) { return p == "team-a" || p == "team-c"; };
  Json r = run("r1");
  r["metadata"]["uid"] = "run-uid-1";
  const Json stamped = stamped_job(r, "team-a");
  // Positive control: the run as stamped at start reads the same both ways.
  EXPECT_EQ(
      admitting_policies(&stamped, with_annotations(r, {{kAnnotationPolicies, "team-a"}}), known),
      std::vector<std::string>{"team-a"});
  // The author empties the run's stamp, or names another team: the Job's counts.
  for (const char* forged : {"", "team-c", "team-c,team-d"}) {
    EXPECT_EQ(
        admitting_policies(&stamped, with_annotations(r, {{kAnnotationPolicies, forged}}), known),
        std::vector<std::string>{"team-a"})
        << forged;
  }
  // A Job that is not the run's (not controlled by it, or not the one its
  // status records) is not believed: the annotation is, for known names only.
  Json foreign = stamped_job(r, "team-x");
  foreign["metadata"]["ownerReferences"][0]["uid"] = "another-run";
  const Json forged = with_annotations(r, {{kAnnotationPolicies, "team-c,team-d,team-a"}});
  EXPECT_EQ(admitting_policies(&foreign, forged, known),
            (std::vector<std::string>{"team-a", "team-c"}));
  Json recorded = forged;
  recorded["status"]["jobUID"] = "job-uid-0";
  EXPECT_EQ(admitting_policies(&stamped, recorded, known),
            (std::vector<std::string>{"team-a", "team-c"}));
  recorded["status"]["jobUID"] = "job-uid-1";
  EXPECT_EQ(admitting_policies(&stamped, recorded, known), std::vector<std::string>{"team-a"});
  // No Job at all: the annotation's known names.
  EXPECT_EQ(admitting_policies(nullptr, forged, known),
            (std::vector<std::string>{"team-a", "team-c"}));
  EXPECT_EQ(admitting_policies(nullptr, r, known), std::vector<std::string>{});
}

TEST(RunRecord, AdmittingPoliciesAreBoundedSortedAndUnique) {
  Json r = run("r1");
  r["metadata"]["uid"] = "run-uid-1";
  std::vector<std::string> many;
  for (std::size_t i = 0; i < kAdmittingPoliciesMax * 4; ++i) {
    many.push_back("p" + std::to_string(1000 + i));
  }
  many.push_back("p1000");
  const Json j = stamped_job(r, policies_annotation(many));
  const std::vector<std::string> got =
      admitting_policies(&j, r, [](const std::string&) { return true; });
  ASSERT_EQ(got.size(), kAdmittingPoliciesMax);
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
  EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end());
  EXPECT_EQ(got.front(), "p1000");
}

TEST(RunRecord, TheFinalStatusRecordsTheChargeAndThePolicies) {
  Json r =
      with_annotations(with_status(run("r1"), {{"phase", "Running"},
                                               {"jobName", "r1"},
                                               {"startedAt", fmt(at("2024-05-01T12:05:00Z"))}}),
                       {{kAnnotationAgentUid, "uid-bot"}, {kAnnotationPolicies, "team-a"}});
  Json j = job("r1");
  Json p = terminated(pod("r1-abc"), 0, result_json(3, 1000, 200, 5, "done"));
  RunObservationInput in;
  in.run = &r;
  in.job = &j;
  in.pods = {&p};
  in.now = at("2024-05-01T12:06:10Z");
  in.pricing = kTestPricing;
  in.provider = "anthropic";
  in.model = "claude-3-5-haiku-latest";
  in.bounds = usage_bounds(AgentSpec{});
  in.admitting_policies = {"team-a"};
  RunObservation o = observe_run(in);
  ASSERT_TRUE(o.became_final);
  EXPECT_EQ(o.status["charge"]["provider"], "anthropic");
  EXPECT_EQ(o.status["charge"]["model"], "claude-3-5-haiku-latest");
  EXPECT_DOUBLE_EQ(o.status["charge"]["inputCentsPerMillionTokens"],
                   kTestPricing.input_cents_per_million_tokens);
  EXPECT_DOUBLE_EQ(o.status["charge"]["outputCentsPerMillionTokens"],
                   kTestPricing.output_cents_per_million_tokens);
  EXPECT_EQ(o.status["policies"], Json::array({"team-a"}));
  // The Agent gone: nothing was charged, so no price is recorded.
  in.agent_missing = true;
  in.pricing = {};
  o = observe_run(in);
  ASSERT_TRUE(o.became_final);
  EXPECT_FALSE(o.status.contains("charge"));
  EXPECT_EQ(o.status["policies"], Json::array({"team-a"}));
}

TEST(RunRecord, TheAuditLineHasEveryFieldAndNoMessageOrOutput) {
  const std::string line = audit_line(counted_run("bot-1", "2024-05-01T12:06:00Z"));
  EXPECT_EQ(
      line.rfind(R"({"audit":"heartbeat_run","namespace":"ns","agent":"bot","run":"bot-1",)", 0),
      0u)
      << line;
  const Json parsed = Json::parse(line);
  EXPECT_EQ(parsed["audit"], "heartbeat_run");
  EXPECT_EQ(parsed["namespace"], "ns");
  EXPECT_EQ(parsed["agent"], "bot");
  EXPECT_EQ(parsed["run"], "bot-1");
  EXPECT_EQ(parsed["uid"], "run-uid-1");
  EXPECT_EQ(parsed["agentUid"], "uid-bot");
  EXPECT_EQ(parsed["source"], "scheduler");
  EXPECT_EQ(parsed["scheduledTime"], "2024-05-01T12:05:00Z");
  EXPECT_EQ(parsed["phase"], "Succeeded");
  EXPECT_EQ(parsed["reason"], "Completed");
  EXPECT_EQ(parsed["stopReason"], "done");
  EXPECT_EQ(parsed["exitCode"], 0);
  EXPECT_EQ(parsed["startedAt"], "2024-05-01T12:05:00Z");
  EXPECT_EQ(parsed["finishedAt"], "2024-05-01T12:06:00Z");
  EXPECT_EQ(parsed["durationSeconds"], 60);
  EXPECT_EQ(parsed["usage"], (Json{{"inputTokens", 1000},
                                   {"outputTokens", 200},
                                   {"llmCalls", 2},
                                   {"toolCalls", 1},
                                   {"iterations", 2}}));
  EXPECT_DOUBLE_EQ(parsed["costCents"], 3.0);
  EXPECT_NE(line.find(R"("charge":{"provider":"openai","model":"gpt-4o-mini","inputCents)"),
            std::string::npos);
  EXPECT_EQ(parsed["charge"]["provider"], "openai");
  EXPECT_EQ(parsed["charge"]["model"], "gpt-4o-mini");
  EXPECT_EQ(parsed["policies"], Json::array({"team-a", "team-b"}));
  EXPECT_EQ(line.find("secret-looking"), std::string::npos);
  EXPECT_EQ(line.find("is not logged"), std::string::npos);
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(RunRecord, ATenantStringWithANewlineOrQuoteStaysOnOneLine) {
  Json r = counted_run("bot-1", "2024-05-01T12:06:00Z");
  const std::string hostile = "bot\n{\"audit\":\"heartbeat_run\",\"forged\":true}\r\"";
  r["spec"]["agentRef"]["name"] = hostile;
  r["status"]["reason"] = "x\ny";
  r["status"]["charge"]["model"] = std::string("m\x01\xff", 3);  // a control byte, bad UTF-8
  const std::string line = audit_line(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_EQ(line.find('\x01'), std::string::npos);
  const Json parsed = Json::parse(line);
  EXPECT_EQ(parsed["agent"], hostile);
  EXPECT_EQ(parsed["reason"], "x\ny");
  EXPECT_FALSE(parsed.contains("forged"));
}

TEST(RunRecord, RetentionDeletesOnlySettledOrphansPastItAndSaysWhenTheNextIsDue) {
  const TimePoint now = at("2024-06-01T00:00:00Z");
  std::vector<Json> orphans = {
      counted_run("old", "2024-05-01T00:00:00Z"), counted_run("edge", "2024-05-02T00:00:00Z"),
      counted_run("young", "2024-05-20T00:00:00Z"), counted_run("younger", "2024-05-25T00:00:00Z")};
  Json uncounted = counted_run("uncounted", "2024-04-01T00:00:00Z");
  uncounted["status"].erase("costRecorded");
  orphans.push_back(uncounted);
  orphans.push_back(with_status(run("running"), {{"phase", "Running"}}));
  Json deleting = counted_run("deleting", "2024-04-01T00:00:00Z");
  deleting["metadata"]["deletionTimestamp"] = "2024-05-31T00:00:00Z";
  orphans.push_back(deleting);

  const RetentionPlan plan = plan_retention(orphans, std::chrono::hours(24 * 30), now);
  EXPECT_EQ(plan.due, (std::vector<std::string>{"old", "edge"}));  // edge: exactly 30 days
  ASSERT_TRUE(plan.next_at.has_value());
  EXPECT_EQ(*plan.next_at, at("2024-06-19T00:00:00Z"));  // young + 30 days

  // Zero keeps every run for good; nothing is due, no requeue.
  const RetentionPlan forever = plan_retention(orphans, 0s, now);
  EXPECT_TRUE(forever.due.empty());
  EXPECT_FALSE(forever.next_at.has_value());
  // Later on the injected clock, the young ones fall due too.
  EXPECT_EQ(plan_retention(orphans, std::chrono::hours(24 * 30), at("2024-06-25T00:00:00Z")).due,
            (std::vector<std::string>{"old", "edge", "young", "younger"}));
}

TEST(RunRecord, RetentionFlagTakesDurationsAndDays) {
  std::string why;
  EXPECT_EQ(parse_retention("30d", why), std::chrono::seconds(30 * 86400));
  EXPECT_EQ(parse_retention("720h", why), std::chrono::seconds(720 * 3600));
  EXPECT_EQ(parse_retention("5s", why), std::chrono::seconds(5));
  EXPECT_EQ(parse_retention("0", why), std::chrono::seconds(0));
  EXPECT_FALSE(parse_retention("-1d", why).has_value());
  EXPECT_FALSE(parse_retention("3651d", why).has_value());
  EXPECT_FALSE(parse_retention("soon", why).has_value());
  EXPECT_NE(why.find("run-retention"), std::string::npos);
  EXPECT_EQ(kRunRetentionDefault, std::chrono::seconds(30 * 86400));
}

}  // namespace
}  // namespace hb::controllers
