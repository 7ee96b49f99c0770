// A thin layer over SQLite's C API for the tuning database: a connection that turns every
// failure into a kiln::Error naming the file, prepared statements with typed binds and columns,
// and write transactions that roll back unless committed. A busy file (another process's
// transaction) is waited for up to the busy timeout, then reported.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::autotune::sqlite {

class Connection {
 public:
  // Opens `path` read-write (creating it) or read-only, or a private in-memory database when
  // `path` is ":memory:". Errors name the file `name` (the path when empty): an in-memory copy
  // of a file is named after the file. Raises a kRuntime error on failure.
  Connection(const std::string& path, bool read_only, double busy_timeout_s,
             const std::string& name = "");
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* handle() const { return db_; }
  // The file that errors name.
  const std::string& path() const { return path_; }
  double busy_timeout_s() const { return busy_timeout_s_; }

  // Runs SQL text without results (schema statements, pragmas that set).
  void execute(const char* sql, const char* doing);
  // Runs a pragma or query with one result value and returns it as text (empty for NULL).
  std::string query_text(const char* sql, const char* doing);
  int64_t query_int(const char* sql, const char* doing);
  // The id of the row the last INSERT added.
  int64_t last_insert_id() const;

  // Raises the kRuntime error for SQLite result code `rc` while `doing` something (e.g. "adding
  // records"): names the file, what went wrong in words and SQLite's own message.
  [[noreturn]] void fail(int rc, const std::string& doing) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  double busy_timeout_s_;
};

// A prepared statement, reused: bind, step through the rows, reset (Use does it on scope exit).
class Statement {
 public:
  Statement(Connection& connection, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1 as in the SQL text (?1, ?2 …).
  void bind(int index, int64_t value);
  void bind(int index, double value);
  void bind(int index, const std::string& value);
  void bind(int index, const std::optional<double>& value);
  void bind_null(int index);

  // Steps to the next row: true when there is one, false when done. A busy file is retried until
  // the busy timeout as long as no row was returned yet (the step can restart cleanly).
  bool step(const char* doing);
  // Clears the bindings and rewinds the statement.
  void reset();

  // Columns of the current row, numbered from 0. A column of another storage type (after a manual
  // edit) reads as empty: text columns as nullopt, numbers as nullopt.
  std::optional<std::string> column_text(int index) const;
  std::optional<int64_t> column_int(int index) const;
  std::optional<double> column_double(int index) const;
  bool column_is_null(int index) const;

  // Resets the statement when it goes out of scope, so that a query interrupted by an exception
  // does not keep its read transaction open.
  class Use {
   public:
    explicit Use(Statement& statement) : statement_(statement) {}
    ~Use() { statement_.reset(); }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    Statement& statement_;
  };

 private:
  Connection& connection_;
  sqlite3_stmt* stmt_ = nullptr;
  bool returned_row_ = false;
};

// BEGIN IMMEDIATE … COMMIT: a write transaction takes the write lock at once (waiting up to the
// busy timeout), so it never fails halfway for a lock. A read transaction (BEGIN) reads one
// snapshot of the file. Rolls back in the destructor unless committed.
class Transaction {
 public:
  enum Mode { kWrite, kRead };
  Transaction(Connection& connection, const char* doing, Mode mode = kWrite);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& connection_;
  std::string doing_;
  bool open_ = true;
};

// Copies the whole database of `from` into `to` (SQLite's online backup): a consistent snapshot,
// read without holding `from` locked for longer than the copy.
void copy_database(Connection& from, Connection& to);

}  // namespace kiln::autotune::sqlite
