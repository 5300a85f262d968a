// Archival memory and conversation history in one SQLite file with FTS5
// full-text indexes, on the agent's own volume (context: archival.path).
// Tables: archival(content, run, created) for archival_memory_insert/search,
// conversation(content, run, created) holding each heartbeat's output for
// conversation_search.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/expected.h"
#include "runner/clock.h"

struct sqlite3;

namespace hb::runner {

struct SearchHit {
  std::string content;
  std::string run;
  std::string created;  // RFC 3339
};

// Why the store could not do what was asked: a value, by kind. The message
// names the path and SQLite's own words ("archival store PATH: ...").
struct ArchivalError {
  enum class Kind {
    kOpen,    // the file could not be opened or created (a link, no room, no permission)
    kSchema,  // a statement failed to prepare or run: the tables, the journal mode
    kInsert,  // a passage or an output was not stored
    kSearch,  // a search stopped part way
  };
  Kind kind;
  std::string message;
};

// The value, or why there is none.
template <class T>
using ArchivalResult = Expected<T, ArchivalError>;
// Nothing on success.
using ArchivalDone = std::optional<ArchivalError>;

class ArchivalStore {
 public:
  // Opens or creates the database (and its parent-less file).
  [[nodiscard]] static ArchivalResult<std::unique_ptr<ArchivalStore>> open(const std::string& path);
  ~ArchivalStore();
  ArchivalStore(const ArchivalStore&) = delete;
  ArchivalStore& operator=(const ArchivalStore&) = delete;

  [[nodiscard]] ArchivalDone insert_passage(const std::string& content, const std::string& run,
                                            TimePoint created);
  [[nodiscard]] ArchivalResult<std::vector<SearchHit>> search_passages(const std::string& query,
                                                                       int limit);
  // Records a heartbeat's output once per run name (later calls are ignored).
  [[nodiscard]] ArchivalDone record_run_output(const std::string& run, const std::string& output,
                                               const std::string& created);
  [[nodiscard]] ArchivalResult<std::vector<SearchHit>> search_conversation(const std::string& query,
                                                                           int limit);
  long long passage_count();

 private:
  explicit ArchivalStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ArchivalDone exec(const std::string& sql);
  ArchivalError error(ArchivalError::Kind kind, const std::string& what) const;
  ArchivalResult<std::vector<SearchHit>> search(const char* table, const std::string& query,
                                                int limit);

  sqlite3* db_;
  std::string path_;
};

// An FTS5 MATCH expression that never fails to parse: each word of the query,
// double-quoted, joined with OR. Empty when the query has no words.
std::string fts5_query(const std::string& text);

}  // namespace hb::runner
