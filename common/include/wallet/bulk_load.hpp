// What the writers of the store (wallet-indexer, wallet-backfill without
// --bulk) need to know about a bulk load (migration 0005, backfill/README.md):
// while one is unfinished, wallet_events has no unique key to deduplicate
// against and no aggregate triggers, so they must not write.
#pragma once

#include <optional>
#include <string>

#include <libpq-fe.h>

#include "wallet/result.hpp"

namespace wallet::bulk_load {

// The advisory lock that orders writers and a bulk load: every writer holds
// it shared for the life of its connection; a bulk run takes it exclusively
// (and only when no writer holds it) to start or resume.
inline constexpr const char* kWritersLockKey = "7426584212";

// On the connection a writer writes with (or holds for its whole run), after
// the migrations: joins the writers (takes the lock shared, for the session)
// and returns why it must not write, or nullopt when it may. A bulk run
// starting later sees this connection and refuses.
Result<std::optional<std::string>> join_writers(PGconn* conn);

}  // namespace wallet::bulk_load
