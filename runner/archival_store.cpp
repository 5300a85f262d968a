#include "runner/archival_store.h"

#include <sqlite3.h>

#include <cctype>
#include <stdexcept>

#include "api/rfc3339.h"

namespace hb::runner {
namespace {

constexpr int kBusyTimeoutMs = 5000;
constexpr std::size_t kQueryWordsMax = 32;

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement_, nullptr) != SQLITE_OK) {
      throw std::runtime_error("archival store " + path + ": " + sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(statement_); }
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

std::unique_ptr<ArchivalStore> ArchivalStore::open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                      nullptr) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw std::runtime_error("archival store " + path + ": cannot open: " + message);
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  std::unique_ptr<ArchivalStore> store(new ArchivalStore(db, path));
  store->exec("PRAGMA journal_mode=WAL");
  store->exec(
      "CREATE VIRTUAL TABLE IF NOT EXISTS archival USING fts5(content, run UNINDEXED, created "
      "UNINDEXED)");
  store->exec(
      "CREATE VIRTUAL TABLE IF NOT EXISTS conversation USING fts5(content, run UNINDEXED, created "
      "UNINDEXED)");
  return store;
}

ArchivalStore::~ArchivalStore() {
  sqlite3_close(db_);
}

void ArchivalStore::exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw std::runtime_error("archival store " + path_ + ": " + message);
  }
}

void ArchivalStore::insert_passage(const std::string& content, const std::string& run,
                                   TimePoint created) {
  Statement statement(db_, "INSERT INTO archival(content, run, created) VALUES (?1, ?2, ?3)",
                      path_);
  statement.bind(1, content);
  statement.bind(2, run);
  statement.bind(3, api::format_rfc3339_millis(created));
  if (statement.step() != SQLITE_DONE) {
    throw std::runtime_error("archival store " + path_ + ": insert failed: " + statement.error());
  }
}

void ArchivalStore::record_run_output(const std::string& run, const std::string& output,
                                      const std::string& created) {
  if (output.empty()) return;
  Statement exists(db_, "SELECT 1 FROM conversation WHERE run = ?1 LIMIT 1", path_);
  exists.bind(1, run);
  if (exists.step() == SQLITE_ROW) return;
  Statement statement(db_, "INSERT INTO conversation(content, run, created) VALUES (?1, ?2, ?3)",
                      path_);
  statement.bind(1, output);
  statement.bind(2, run);
  statement.bind(3, created);
  if (statement.step() != SQLITE_DONE) {
    throw std::runtime_error("archival store " + path_ + ": insert failed: " + statement.error());
  }
}

std::vector<SearchHit> ArchivalStore::search(const char* table, const std::string& query,
                                             int limit) {
  std::string match = fts5_query(query);
  if (match.empty()) return {};
  Statement statement(db_,
                      std::string("SELECT content, run, created FROM ") + table + " WHERE " +
                          table + " MATCH ?1 ORDER BY rank LIMIT ?2",
                      path_);
  statement.bind(1, match);
  statement.bind(2, static_cast<long long>(limit));
  std::vector<SearchHit> hits;
  int status;
  while ((status = statement.step()) == SQLITE_ROW) {
    hits.push_back({statement.text(0), statement.text(1), statement.text(2)});
  }
  if (status != SQLITE_DONE) {
    throw std::runtime_error("archival store " + path_ + ": search failed: " + statement.error());
  }
  return hits;
}

std::vector<SearchHit> ArchivalStore::search_passages(const std::string& query, int limit) {
  return search("archival", query, limit);
}

std::vector<SearchHit> ArchivalStore::search_conversation(const std::string& query, int limit) {
  return search("conversation", query, limit);
}

long long ArchivalStore::passage_count() {
  Statement statement(db_, "SELECT count(*) FROM archival", path_);
  return statement.step() == SQLITE_ROW ? statement.integer(0) : 0;
}

}  // namespace hb::runner
