#include "runner/archival_store.h"

#include <sqlite3.h>

#include <cctype>

#include "api/hb_assert.h"
#include "api/rfc3339.h"

namespace hb::runner {
namespace {

constexpr int kBusyTimeoutMs = 5000;
constexpr std::size_t kQueryWordsMax = 32;

// A prepared statement; prepared() says whether SQLite accepted it (error() says why not).
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql)
      : db_(db),
        prepared_(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement_, nullptr) == SQLITE_OK) {}
  ~Statement() { sqlite3_finalize(statement_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool prepared() const { return prepared_; }
  void bind(int index, const std::string& text) {
    sqlite3_bind_text(statement_, index, text.c_str(), static_cast<int>(text.size()),
                      SQLITE_TRANSIENT);
  }
  void bind(int index, long long value) { sqlite3_bind_int64(statement_, index, value); }
  int step() { return sqlite3_step(statement_); }
  std::string text(int column) {
    auto* data = reinterpret_cast<const char*>(sqlite3_column_text(statement_, column));
    return data ? std::string(data,
                              static_cast<std::size_t>(sqlite3_column_bytes(statement_, column)))
                : std::string();
  }
  long long integer(int column) { return sqlite3_column_int64(statement_, column); }
  const char* error() const { return sqlite3_errmsg(db_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
  bool prepared_;
};

// Run in order on every open; each may run again on a store made before.
constexpr const char* kSchemaStatements[] = {
    "PRAGMA journal_mode=WAL",
    "CREATE VIRTUAL TABLE IF NOT EXISTS archival USING fts5(content, run UNINDEXED, created "
    "UNINDEXED)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS conversation USING fts5(content, run UNINDEXED, created "
    "UNINDEXED)",
};

}  // namespace

std::string fts5_query(const std::string& text) {
  std::string out, word;
  std::size_t words = 0;
  auto flush = [&] {
    if (word.empty() || words >= kQueryWordsMax) {
      word.clear();
      return;
    }
    if (!out.empty()) out += " OR ";
    out += "\"" + word + "\"";
    ++words;
    word.clear();
  };
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || byte >= 0x80 || c == '_') {
      word += c;
    } else {
      flush();
    }
  }
  flush();
  return out;
}

ArchivalResult<std::unique_ptr<ArchivalStore>> ArchivalStore::open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                      nullptr) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return ArchivalError{ArchivalError::Kind::kOpen,
                         "archival store " + path + ": cannot open: " + message};
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  std::unique_ptr<ArchivalStore> store(new ArchivalStore(db, path));
  for (const char* sql : kSchemaStatements) {
    if (ArchivalDone failed = store->exec(sql)) return std::move(*failed);
  }
  return store;
}

ArchivalStore::~ArchivalStore() {
  sqlite3_close(db_);
}

ArchivalError ArchivalStore::error(ArchivalError::Kind kind, const std::string& what) const {
  return {kind, "archival store " + path_ + ": " + what};
}

ArchivalDone ArchivalStore::exec(const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) == SQLITE_OK) return std::nullopt;
  std::string what = message ? message : "unknown error";
  sqlite3_free(message);
  return error(ArchivalError::Kind::kSchema, what);
}

ArchivalDone ArchivalStore::insert_passage(const std::string& content, const std::string& run,
                                           TimePoint created) {
  Statement statement(db_, "INSERT INTO archival(content, run, created) VALUES (?1, ?2, ?3)");
  if (!statement.prepared()) return error(ArchivalError::Kind::kSchema, statement.error());
  statement.bind(1, content);
  statement.bind(2, run);
  statement.bind(3, api::format_rfc3339_millis(created));
  if (statement.step() != SQLITE_DONE) {
    return error(ArchivalError::Kind::kInsert, std::string("insert failed: ") + statement.error());
  }
  return std::nullopt;
}

ArchivalDone ArchivalStore::record_run_output(const std::string& run, const std::string& output,
                                              const std::string& created) {
  if (output.empty()) return std::nullopt;
  Statement exists(db_, "SELECT 1 FROM conversation WHERE run = ?1 LIMIT 1");
  if (!exists.prepared()) return error(ArchivalError::Kind::kSchema, exists.error());
  exists.bind(1, run);
  if (exists.step() == SQLITE_ROW) return std::nullopt;
  Statement statement(db_, "INSERT INTO conversation(content, run, created) VALUES (?1, ?2, ?3)");
  if (!statement.prepared()) return error(ArchivalError::Kind::kSchema, statement.error());
  statement.bind(1, output);
  statement.bind(2, run);
  statement.bind(3, created);
  if (statement.step() != SQLITE_DONE) {
    return error(ArchivalError::Kind::kInsert, std::string("insert failed: ") + statement.error());
  }
  return std::nullopt;
}

ArchivalResult<std::vector<SearchHit>> ArchivalStore::search(const char* table,
                                                             const std::string& query, int limit) {
  HB_ASSERT(limit > 0);
  std::string match = fts5_query(query);
  if (match.empty()) return std::vector<SearchHit>{};
  Statement statement(db_, std::string("SELECT content, run, created FROM ") + table + " WHERE " +
                               table + " MATCH ?1 ORDER BY rank LIMIT ?2");
  if (!statement.prepared()) return error(ArchivalError::Kind::kSchema, statement.error());
  statement.bind(1, match);
  statement.bind(2, static_cast<long long>(limit));
  std::vector<SearchHit> hits;
  int status;
  while ((status = statement.step()) == SQLITE_ROW) {
    hits.push_back({statement.text(0), statement.text(1), statement.text(2)});
  }
  if (status != SQLITE_DONE) {
    return error(ArchivalError::Kind::kSearch, std::string("search failed: ") + statement.error());
  }
  return hits;
}

ArchivalResult<std::vector<SearchHit>> ArchivalStore::search_passages(const std::string& query,
                                                                      int limit) {
  return search("archival", query, limit);
}

ArchivalResult<std::vector<SearchHit>> ArchivalStore::search_conversation(const std::string& query,
                                                                          int limit) {
  return search("conversation", query, limit);
}

long long ArchivalStore::passage_count() {
  Statement statement(db_, "SELECT count(*) FROM archival");
  return statement.prepared() && statement.step() == SQLITE_ROW ? statement.integer(0) : 0;
}

}  // namespace hb::runner
