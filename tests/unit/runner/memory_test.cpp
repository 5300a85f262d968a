#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runner/archival_store.h"
#include "runner/limits.h"
#include "runner/memory_tools.h"
#include "runner/toolbox.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/memory_store_fake.h"

namespace hb::runner {
namespace {

using fakes::FakeClock;
using fakes::FakeMemoryStore;
using nlohmann::json;

MemoryBlocks spec() {
  return {{"human", "Ada", 40}, {"notes", "", 30}};
}

TEST(CoreMemoryService, EditIsSavedAndVisible) {
  FakeMemoryStore store;
  CoreMemoryService memory(spec(), &store);
  ASSERT_TRUE(memory.load().ok());
  auto outcome = memory.edit({MemoryEdit::Kind::kAppend, "notes", "met Bob", ""});
  EXPECT_FALSE(outcome.is_error) << outcome.content;
  EXPECT_NE(outcome.content.find("7/30"), std::string::npos) << outcome.content;
  EXPECT_EQ(memory.blocks()[1].value, "met Bob");
  EXPECT_TRUE(store.exists);
  EXPECT_EQ(store.blocks[1].value, "met Bob");
  EXPECT_EQ(memory.saves(), 1);
  // A second edit saves against the new version.
  EXPECT_FALSE(memory.edit({MemoryEdit::Kind::kReplace, "human", "Ada Lovelace", "Ada"}).is_error);
  EXPECT_EQ(store.blocks[0].value, "Ada Lovelace");
}

TEST(CoreMemoryService, NextHeartbeatSeesTheEdits) {
  FakeMemoryStore store;
  {
    CoreMemoryService first(spec(), &store);
    ASSERT_TRUE(first.load().ok());
    first.edit({MemoryEdit::Kind::kAppend, "notes", "remember the milk", ""});
  }
  CoreMemoryService second(spec(), &store);
  ASSERT_TRUE(second.load().ok());
  EXPECT_EQ(second.blocks()[1].value, "remember the milk");
}

TEST(CoreMemoryService, ConflictReloadsAndReappliesTheEdit) {
  FakeMemoryStore store;
  store.exists = true;
  store.blocks = spec();
  CoreMemoryService memory(spec(), &store);
  ASSERT_TRUE(memory.load().ok());
  store.conflicts_to_inject = 1;
  auto outcome = memory.edit({MemoryEdit::Kind::kAppend, "notes", "x", ""});
  EXPECT_FALSE(outcome.is_error) << outcome.content;
  EXPECT_EQ(memory.conflicts(), 1);
  EXPECT_EQ(store.blocks[0].value, "Ada [edited elsewhere]") << "the other writer's edit is kept";
  EXPECT_EQ(store.blocks[1].value, "x");
}

TEST(CoreMemoryService, PersistentConflictsGiveUpWithAnError) {
  FakeMemoryStore store;
  CoreMemoryService memory(spec(), &store);
  store.conflicts_to_inject = 10;
  auto outcome = memory.edit({MemoryEdit::Kind::kAppend, "notes", "x", ""});
  EXPECT_TRUE(outcome.is_error);
  EXPECT_EQ(store.save_attempts, 3);
}

TEST(CoreMemoryService, SaveFailureLeavesMemoryUnchanged) {
  FakeMemoryStore store;
  store.fail_saves = true;
  CoreMemoryService memory(spec(), &store);
  auto outcome = memory.edit({MemoryEdit::Kind::kAppend, "notes", "x", ""});
  EXPECT_TRUE(outcome.is_error);
  EXPECT_NE(outcome.content.find("forbidden"), std::string::npos);
  EXPECT_EQ(memory.blocks()[1].value, "");
}

TEST(CoreMemoryService, BlockLimitErrorTellsTheRoomLeft) {
  CoreMemoryService memory(spec(), nullptr);
  auto outcome = memory.edit({MemoryEdit::Kind::kAppend, "human", std::string(40, 'z'), ""});
  EXPECT_TRUE(outcome.is_error);
  EXPECT_NE(outcome.content.find("37 characters of room are left"), std::string::npos)
      << outcome.content;
}

class ArchivalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("hb-archival-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    std::filesystem::remove(path_);
  }
  void TearDown() override {
    for (auto suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_.string() + suffix);
  }
  std::filesystem::path path_;
};

std::unique_ptr<ArchivalStore> open_store(const std::string& path) {
  auto opened = ArchivalStore::open(path);
  if (!opened.ok()) {
    ADD_FAILURE() << opened.error().message;
    return nullptr;
  }
  return std::move(opened).value();
}

std::vector<SearchHit> hits_of(ArchivalResult<std::vector<SearchHit>> searched) {
  if (!searched.ok()) {
    ADD_FAILURE() << searched.error().message;
    return {};
  }
  return std::move(searched).value();
}

TEST_F(ArchivalTest, InsertAndSearchPassages) {
  FakeClock clock;
  auto store = open_store(path_.string());
  ASSERT_TRUE(store);
  EXPECT_FALSE(store->insert_passage("The deploy key rotates every Monday.", "run-1", clock.now()));
  EXPECT_FALSE(store->insert_passage("Bob prefers tea over coffee.", "run-1", clock.now()));
  auto hits = hits_of(store->search_passages("when does the key rotate? monday", 5));
  ASSERT_FALSE(hits.empty());
  EXPECT_NE(hits[0].content.find("Monday"), std::string::npos);
  EXPECT_EQ(hits[0].run, "run-1");
  EXPECT_TRUE(hits_of(store->search_passages("zebra", 5)).empty());
  EXPECT_TRUE(hits_of(store->search_passages("\"unbalanced AND (", 5)).empty())
      << "never an FTS5 syntax error";
  EXPECT_EQ(store->passage_count(), 2);
}

TEST_F(ArchivalTest, PersistsAcrossHeartbeats) {
  FakeClock clock;
  EXPECT_FALSE(open_store(path_.string())->insert_passage("alpha beta", "run-1", clock.now()));
  EXPECT_EQ(hits_of(open_store(path_.string())->search_passages("beta", 5)).size(), 1u);
}

// A link planted at the store's path is refused, never opened through.
TEST_F(ArchivalTest, ALinkAtTheStorePathIsRefused) {
  const auto victim = path_.string() + "-victim";
  EXPECT_FALSE(open_store(victim)->insert_passage("alpha", "run-1", FakeClock().now()));
  std::filesystem::create_symlink(victim, path_);
  auto opened = ArchivalStore::open(path_.string());
  ASSERT_FALSE(opened.ok());
  const ArchivalError* failed = &opened.error();
  EXPECT_EQ(failed->kind, ArchivalError::Kind::kOpen);
  EXPECT_EQ(failed->message.rfind("archival store " + path_.string() + ": cannot open: ", 0), 0u)
      << failed->message;
  for (auto suffix : {"", "-wal", "-shm"}) std::filesystem::remove(victim + suffix);
}

// A directory that does not exist: the file cannot be created.
TEST_F(ArchivalTest, AnUnwritablePathIsAnOpenError) {
  const std::string path = (path_ / "no-such-dir" / "archival.db").string();
  auto opened = ArchivalStore::open(path);
  ASSERT_FALSE(opened.ok());
  const ArchivalError* failed = &opened.error();
  EXPECT_EQ(failed->kind, ArchivalError::Kind::kOpen);
  EXPECT_EQ(failed->message,
            "archival store " + path + ": cannot open: unable to open database file");
}

// A file that is not a database: the schema cannot be made.
TEST_F(ArchivalTest, AFileThatIsNotADatabaseIsASchemaError) {
  { std::ofstream(path_) << std::string(4096, 'x'); }
  auto opened = ArchivalStore::open(path_.string());
  ASSERT_FALSE(opened.ok());
  const ArchivalError* failed = &opened.error();
  EXPECT_EQ(failed->kind, ArchivalError::Kind::kSchema);
  EXPECT_EQ(failed->message, "archival store " + path_.string() + ": file is not a database");
}

TEST_F(ArchivalTest, ConversationRecordsEachRunOnce) {
  auto store = open_store(path_.string());
  ASSERT_TRUE(store);
  EXPECT_FALSE(
      store->record_run_output("run-1", "checked the disk: 80% full", "2024-05-01T11:00:00Z"));
  EXPECT_FALSE(
      store->record_run_output("run-1", "checked the disk: 80% full", "2024-05-01T11:00:00Z"));
  EXPECT_FALSE(store->record_run_output("run-2", "rotated logs", "2024-05-01T12:00:00Z"));
  auto hits = hits_of(store->search_conversation("disk", 5));
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].run, "run-1");
  EXPECT_EQ(hits[0].created, "2024-05-01T11:00:00Z");
}

TEST(Fts5Query, QuotesEveryWord) {
  EXPECT_EQ(fts5_query("disk AND \"full\" (now)"), "\"disk\" OR \"AND\" OR \"full\" OR \"now\"");
  EXPECT_EQ(fts5_query("  ?! "), "");
}

TEST_F(ArchivalTest, ToolboxDispatchesAndValidates) {
  FakeClock clock;
  Heartbeat heartbeat(clock);
  CoreMemoryService memory(spec(), nullptr);
  auto store = open_store(path_.string());
  ASSERT_TRUE(store);
  LocalShell local_shell;
  Toolbox tools({memory, store.get(), heartbeat, clock, "run-7", {}, nullptr, &local_shell});
  auto deadline = clock.now() + std::chrono::minutes(5);
  EXPECT_FALSE(
      tools.run("archival_memory_insert", {{"content", "the vault code is 1234"}}, deadline)
          .is_error);
  auto found = tools.run("archival_memory_search", {{"query", "vault"}}, deadline);
  EXPECT_FALSE(found.is_error);
  EXPECT_NE(found.content.find("1234"), std::string::npos);
  EXPECT_TRUE(tools.run("archival_memory_search", {{"query", "?"}}, deadline).is_error);
  auto missing = tools.run("core_memory_append", {{"label", "notes"}}, deadline);
  EXPECT_TRUE(missing.is_error);
  EXPECT_NE(missing.content.find("\"content\" is required"), std::string::npos);
  EXPECT_FALSE(tools
                   .run("core_memory_replace",
                        {{"label", "human"}, {"old_content", "Ada"}, {"new_content", ""}}, deadline)
                   .is_error);
  EXPECT_EQ(memory.blocks()[0].value, "");
  auto shell = tools.run("shell", {{"command", "echo hi"}}, deadline);
  EXPECT_FALSE(shell.is_error);
  EXPECT_NE(shell.content.find("exit_code: 0"), std::string::npos);
  // A quick command does not beat: the loop beats per tool call, the shell
  // only every kShellBeatInterval while a command runs
  // (Toolbox.AShellCommandBeatsTheHeartbeatWhileItRuns).
  EXPECT_EQ(heartbeat.beats(), 0);
  EXPECT_TRUE(tools.run("shell", {{"command", 5}}, deadline).is_error);
  EXPECT_TRUE(tools.run("shell", {{"command", "true"}}, clock.now()).is_error) << "no time left";
}

// A shell that runs long: beats as run_shell does, every beat_interval.
class LongShell final : public ShellExecutor {
 public:
  ShellResult run(const std::string&, const ShellOptions& options) override {
    interval = options.beat_interval;
    for (int i = 0; i < 3; ++i) options.beat();
    ShellResult r;
    r.exit_code = 0;
    return r;
  }
  std::chrono::milliseconds interval{0};
};

TEST(Toolbox, AShellCommandBeatsTheHeartbeatWhileItRuns) {
  FakeClock clock;
  Heartbeat heartbeat(clock);
  CoreMemoryService memory(spec(), nullptr);
  LongShell shell;
  Toolbox tools({memory, nullptr, heartbeat, clock, "run", {}, nullptr, &shell});
  auto outcome = tools.run("shell", {{"command", "make"}}, clock.now() + std::chrono::minutes(5));
  EXPECT_FALSE(outcome.is_error) << outcome.content;
  EXPECT_EQ(heartbeat.beats(), 3);
  EXPECT_EQ(heartbeat.last_beat(), clock.now());
  EXPECT_EQ(shell.interval, kShellBeatInterval);
}

TEST(Toolbox, NoArchivalStorageAnswersWithAnError) {
  FakeClock clock;
  Heartbeat heartbeat(clock);
  CoreMemoryService memory(spec(), nullptr);
  Toolbox tools({memory, nullptr, heartbeat, clock, "run", {}, nullptr});
  auto outcome =
      tools.run("conversation_search", {{"query", "x"}}, clock.now() + std::chrono::minutes(1));
  EXPECT_TRUE(outcome.is_error);
  EXPECT_NE(outcome.content.find("not configured"), std::string::npos);
}

}  // namespace
}  // namespace hb::runner
