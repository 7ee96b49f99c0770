// The SQLite layer of the tuning database (see database_sqlite.h): connections, statements and
// transactions, with SQLite's result codes turned into kiln errors that name the file.
#include "autotune/database_sqlite.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "kiln/support/error.h"

namespace kiln::autotune::sqlite {
namespace {

using Clock = std::chrono::steady_clock;

bool is_busy(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

// What a result code means for the user, in words; SQLite's own message follows it.
std::string explain(int rc, double busy_timeout_s) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
      return "the file is not a SQLite database";
    case SQLITE_CORRUPT:
      return "the file is corrupt; restore it from a copy or a JSON-lines export";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "another process held the database locked for more than " +
             std::to_string(static_cast<int>(std::lround(busy_timeout_s))) + " s";
    case SQLITE_CANTOPEN:
      return "the file cannot be opened; check that its directory exists and that it is readable "
             "and writable";
    case SQLITE_READONLY:
      return "the file or its directory is read-only";
    case SQLITE_FULL:
      return "the disk is full";
    case SQLITE_IOERR:
      return "an I/O error occurred";
    case SQLITE_NOMEM:
      return "out of memory";
    default:
      return "SQLite reported an error";
  }
}

// Waits a little longer after each busy attempt, up to 50 ms, so that two processes that keep
// colliding drift apart instead of retrying in lockstep.
void back_off(int attempt) {
  int ms = std::min(50, 1 << std::min(attempt, 6));
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace

Connection::Connection(const std::string& path, bool read_only, double busy_timeout_s,
                       const std::string& name)
    : path_(name.empty() ? path : name), busy_timeout_s_(busy_timeout_s) {
  int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    // SQLite allocates the handle even when opening fails; the destructor will not run.
    try {
      fail(rc, "opening");
    } catch (...) {
      sqlite3_close(db_);
      throw;
    }
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, static_cast<int>(std::lround(busy_timeout_s * 1000.0)));
}

Connection::~Connection() {
  // Statements are finalized before the connection (their owners are destroyed first), so
  // sqlite3_close succeeds; a failure here could only be a kiln bug and must not throw.
  if (db_ != nullptr) sqlite3_close(db_);
}

void Connection::fail(int rc, const std::string& doing) const {
  // The connection's message is more precise ("no such table: x") when it is about this failure.
  bool same = db_ != nullptr && (sqlite3_errcode(db_) & 0xff) == (rc & 0xff);
  std::string detail = same ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  user_error(ErrorKind::kRuntime) << "kiln.autotune.Database: " << doing << " '" << path_
                                  << "' failed: " << explain(rc, busy_timeout_s_)
                                  << " (SQLite: " << detail << ")";
}

void Connection::execute(const char* sql, const char* doing) {
  // Step 1. Prepare and run each statement of the text in turn.
  const char* rest = sql;
  while (rest != nullptr && *rest != '\0') {
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v2(db_, rest, -1, &raw, &tail);
    if (rc != SQLITE_OK) fail(rc, doing);
    rest = tail;
    if (raw == nullptr) continue;  // only whitespace or a comment was left
    // Step 2. Step it to the end, waiting out a busy file like Statement::step.
    auto deadline = Clock::now() + std::chrono::duration<double>(busy_timeout_s_);
    int attempt = 0;
    while ((rc = sqlite3_step(raw)) == SQLITE_ROW || (is_busy(rc) && Clock::now() < deadline)) {
      if (rc != SQLITE_ROW) {
        sqlite3_reset(raw);
        back_off(attempt++);
      }
    }
    sqlite3_finalize(raw);
    if (rc != SQLITE_DONE) fail(rc, doing);
  }
}

std::string Connection::query_text(const char* sql, const char* doing) {
  Statement statement(*this, sql);
  if (!statement.step(doing)) return "";
  return statement.column_text(0).value_or("");
}

int64_t Connection::query_int(const char* sql, const char* doing) {
  Statement statement(*this, sql);
  if (!statement.step(doing)) return 0;
  return statement.column_int(0).value_or(0);
}

int64_t Connection::last_insert_id() const {
  return sqlite3_last_insert_rowid(db_);
}

Statement::Statement(Connection& connection, const char* sql) : connection_(connection) {
  int rc =
      sqlite3_prepare_v3(connection.handle(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) connection.fail(rc, "preparing a query on");
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

void Statement::bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) connection_.fail(rc, "binding a query parameter on");
}

void Statement::bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) connection_.fail(rc, "binding a query parameter on");
}

void Statement::bind(int index, const std::string& value) {
  int rc =
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) connection_.fail(rc, "binding a query parameter on");
}

void Statement::bind(int index, const std::optional<double>& value) {
  if (value) {
    bind(index, *value);
  } else {
    bind_null(index);
  }
}

void Statement::bind_null(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) connection_.fail(rc, "binding a query parameter on");
}

bool Statement::step(const char* doing) {
  auto deadline = Clock::now() + std::chrono::duration<double>(connection_.busy_timeout_s());
  int attempt = 0;
  for (;;) {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) {
      returned_row_ = true;
      return true;
    }
    if (rc == SQLITE_DONE) return false;
    // SQLite's busy handler already waited where it could; some busy results skip the handler
    // (a WAL file being recovered by another process), and those are retried here. A statement
    // that has returned rows cannot restart without repeating them, so it fails instead.
    if (is_busy(rc) && !returned_row_ && Clock::now() < deadline) {
      sqlite3_reset(stmt_);
      back_off(attempt++);
      continue;
    }
    connection_.fail(rc, doing);
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  returned_row_ = false;
}

std::optional<std::string> Statement::column_text(int index) const {
  if (sqlite3_column_type(stmt_, index) != SQLITE_TEXT) return std::nullopt;
  const unsigned char* text = sqlite3_column_text(stmt_, index);
  int size = sqlite3_column_bytes(stmt_, index);
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
}

std::optional<int64_t> Statement::column_int(int index) const {
  if (sqlite3_column_type(stmt_, index) != SQLITE_INTEGER) return std::nullopt;
  return sqlite3_column_int64(stmt_, index);
}

std::optional<double> Statement::column_double(int index) const {
  int type = sqlite3_column_type(stmt_, index);
  if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) return std::nullopt;
  return sqlite3_column_double(stmt_, index);
}

bool Statement::column_is_null(int index) const {
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

Transaction::Transaction(Connection& connection, const char* doing, Mode mode)
    : connection_(connection), doing_(doing) {
  connection_.execute(mode == kWrite ? "BEGIN IMMEDIATE" : "BEGIN", doing);
}

Transaction::~Transaction() {
  // A rollback that fails leaves SQLite to roll back when the connection closes; it cannot be
  // reported from a destructor that may run during another exception.
  if (open_) sqlite3_exec(connection_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  connection_.execute("COMMIT", doing_.c_str());
  open_ = false;
}

void copy_database(Connection& from, Connection& to) {
  sqlite3_backup* backup = sqlite3_backup_init(to.handle(), "main", from.handle(), "main");
  if (backup == nullptr) to.fail(sqlite3_errcode(to.handle()), "copying");
  auto deadline = Clock::now() + std::chrono::duration<double>(from.busy_timeout_s());
  int attempt = 0;
  int rc;
  while ((rc = sqlite3_backup_step(backup, -1)) != SQLITE_DONE) {
    if (!is_busy(rc) || Clock::now() >= deadline) break;
    back_off(attempt++);
  }
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) from.fail(rc, "reading");
}

}  // namespace kiln::autotune::sqlite
