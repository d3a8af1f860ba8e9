// Writes that must not be lost while the store is away: a result the database cannot take now
// (unreachable, disk full) waits in a spool folder, one file per result, and is written, in
// the order spooled, before the next result or when the database is back.
#pragma once

#include <string>

#include "common/result.h"
#include "store/store.h"

namespace perfgate::store {

// Where results wait that the store at `url` could not take yet: beside a SQLite file
// (results.db.spool/), or for a server, in the local data folder under a name of its own.
std::string DefaultSpoolDir(const std::string& url);

class Spool {
 public:
  // `dir` is created when the first result is spooled.
  explicit Spool(std::string dir) : dir_(std::move(dir)) {}

  // Keeps `result` until Drain writes it. Blocking (one file, written atomically).
  Status Add(const NodeResult& result);
  // Results waiting.
  int Pending() const;
  // Writes the waiting results into `store`, oldest first, removing each once stored (or
  // found already stored). Stops at the first error the store may recover from (unavailable,
  // disk full), which it returns, and what is left waits; a result the store refuses for good
  // (or an unreadable file) is set aside as *.refused.
  // Returns how many were written.
  Result<int> Drain(Store& store);
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  long long sequence_ = 0;
};

// What became of a result given to PutOrSpool.
enum class Stored { kWritten, kAlreadyStored, kSpooled };

// Writes what `spool` holds, then `result`, into `store` (null: the store could not be
// opened). A failure the store may recover from (kUnavailable, kResourceExhausted) spools
// the result and returns kSpooled with `why` set to the error; other errors are returned.
Result<Stored> PutOrSpool(Store* store, Spool& spool, const NodeResult& result, Status* why);

}  // namespace perfgate::store
