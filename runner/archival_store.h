// Archival memory and conversation history in one SQLite file with FTS5
// full-text indexes, on the agent's own volume (context: archival.path).
// Tables: archival(content, run, created) for archival_memory_insert/search,
// conversation(content, run, created) holding each heartbeat's output for
// conversation_search.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runner/clock.h"

struct sqlite3;

namespace hb::runner {

struct SearchHit {
  std::string content;
  std::string run;
  std::string created;  // RFC 3339
};

class ArchivalStore {
 public:
  // Opens or creates the database (and its parent-less file). Throws
  // std::runtime_error naming the path.
  static std::unique_ptr<ArchivalStore> open(const std::string& path);
  ~ArchivalStore();
  ArchivalStore(const ArchivalStore&) = delete;
  ArchivalStore& operator=(const ArchivalStore&) = delete;

  void insert_passage(const std::string& content, const std::string& run, TimePoint created);
  std::vector<SearchHit> search_passages(const std::string& query, int limit);
  // Records a heartbeat's output once per run name (later calls are ignored).
  void record_run_output(const std::string& run, const std::string& output,
                         const std::string& created);
  std::vector<SearchHit> search_conversation(const std::string& query, int limit);
  long long passage_count();

 private:
  explicit ArchivalStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  void exec(const std::string& sql);
  std::vector<SearchHit> search(const char* table, const std::string& query, int limit);

  sqlite3* db_;
  std::string path_;
};

// An FTS5 MATCH expression that never fails to parse: each word of the query,
// double-quoted, joined with OR. Empty when the query has no words.
std::string fts5_query(const std::string& text);

}  // namespace hb::runner
