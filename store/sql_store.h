// The store over a SQL connection: one schema and one set of statements for every backend.
#pragma once

#include <memory>

#include "store/sql.h"
#include "store/store.h"

namespace perfgate::store {

// Brings the database's schema to LatestSchemaVersion() (migrations in order, each in its own
// transaction) and returns the store. kFailedPrecondition when the database is newer than
// this build.
Result<std::unique_ptr<Store>> MakeSqlStore(std::unique_ptr<sql::Connection> conn);

}  // namespace perfgate::store
