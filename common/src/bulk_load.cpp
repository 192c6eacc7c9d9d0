#include "wallet/bulk_load.hpp"

#include "wallet/pg.hpp"

namespace wallet::bulk_load {

Result<std::optional<std::string>> join_writers(PGconn* conn) {
    // Shared first, then the state: a bulk run that entered meanwhile has
    // committed its state row by the time the lock is granted.
    auto locked = pg::exec(conn, std::string("SELECT pg_advisory_lock_shared(") + kWritersLockKey + ")");
    if (!locked) return make_error("writers lock: " + locked.error());
    auto state = pg::exec(conn,
                          "SELECT state, first_block, last_block FROM wallet_bulk_load WHERE state <> 'done'");
    if (!state) return make_error("bulk load state: " + state.error());
    if (PQntuples(state->get()) == 0) return std::optional<std::string>();
    return std::optional<std::string>(
        std::string("a bulk load (wallet-backfill --bulk) of blocks ") + PQgetvalue(state->get(), 0, 1) + ".." +
        PQgetvalue(state->get(), 0, 2) + " is unfinished (state '" + PQgetvalue(state->get(), 0, 0) +
        "'): the store has no unique key yet; run `wallet-backfill --bulk` again until it ends, then start this");
}

}  // namespace wallet::bulk_load
