// The API's SQL: a fixed set of statements prepared once per connection, and
// the parameters of each call. Every value a client sends reaches PostgreSQL
// as a parameter, never as SQL text. Absent bounds become +-infinity so that
// one generic plan per statement serves every call.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <libpq-fe.h>

#include "api_request.hpp"

namespace wallet::api {

struct StatementCall {
    const char* name = "";
    std::vector<std::optional<std::string>> params;  // text form; nullopt is SQL NULL
};

// Every statement: name -> "(parameter types) AS sql", the text that follows
// "PREPARE name" (the benchmark runs the same SQL).
const std::map<std::string, std::string>& prepared_statements();

// An account id a worker remembers by name, with the store generation
// (wallet_store_state) it was read under: ids hold within one store only.
struct RememberedAccount {
    std::int64_t id = 0;
    std::int64_t generation = 0;
};

// `remembered`: the worker's id for query.account, used when its generation
// is the store's (else the statement looks the name up).
StatementCall page_statement(const PageQuery& query, const std::optional<RememberedAccount>& remembered = std::nullopt);
StatementCall totals_statement(const PageQuery& query, const std::optional<RememberedAccount>& remembered = std::nullopt);
StatementCall status_statement(std::int64_t node_max_stall_ms);
// Whether the database is a standby and how far its replay is behind (the
// workers' probes of each database, not a client's method).
StatementCall database_statement();
// `remembered` as for a page (not used at a time).
StatementCall balances_statement(const BalanceQuery& query, const std::optional<RememberedAccount>& remembered = std::nullopt);
StatementCall balance_history_statement(const BalanceHistoryQuery& query,
                                        const std::optional<RememberedAccount>& remembered = std::nullopt);
StatementCall balance_periods_statement(const BalanceHistoryQuery& query, std::int64_t max_periods);

// How many of the account's events a balance history page looks at: a page
// holds the changes of the component among them, at most `limit`, so a
// component that rarely moves gives short pages (each with its cursor)
// rather than a page that reads the account's whole history.
inline constexpr std::int64_t kBalanceHistoryScanFactor = 4;
inline std::int64_t balance_history_scan(std::int64_t limit) { return limit * kBalanceHistoryScanFactor; }

// Whether a cell of a statement's result is SQL NULL.
inline bool is_null(PGresult* rows, int row, int column) { return PQgetisnull(rows, row, column) != 0; }

// Column positions of the balances statement's result: a header row (kind
// 0), the account's state at a block from its last change run starting at or
// below it (kind 1, none when it has none; migration 0024) and the events
// after that block up to the asked one (kind 2), in no order.
namespace balances_column {
inline constexpr int kKind = 0;
inline constexpr int kN1 = 1;  // header: indexed_block; run: the state's block; events: block_num
inline constexpr int kN2 = 2;  // header: the block; events: block_seq
inline constexpr int kN3 = 3;  // header: account id (NULL: unknown); run: its start (after_block)
inline constexpr int kN4 = 4;  // header: the configured range's first block
inline constexpr int kN5 = 5;  // header: the first block still loading
inline constexpr int kN6 = 6;  // header: the store generation the account id is of (migration 0030; NULL before it)
inline constexpr int kT1 = 7;  // header: outdated from; run: the state at its start (hex); events: account
inline constexpr int kT2 = 8;  // header: outdated to; run: its changes (hex, wallet/balance_runs.hpp); events: role
inline constexpr int kT3 = 9;  // header: the account's first undecodable block; events: op type
inline constexpr int kT4 = 10; // header: its op type; events: payload
// The balance history and period statements (migration 0020) add: the
// events' epoch in kN3, and rows of kind 3: the history page's lowest block
// (kN1), or a period boundary (kN1 its index, kN2 its block, kN3 its epoch);
// a period statement's runs carry their boundary's index in kN2.
// The history page statement of migration 0029 also gives the page's upper
// key in its kind 3 row (kN2 block, kN3 block_seq * 100 + role), one run
// row per walked run (kN1 the last block it holds), and rows of kind 4 (a
// block's time: kN1 block, kN2 epoch) and 5 (kN1 an account id, kT1 its name).
// get_balances at a time (migration 0022) adds one row of kind 3: the last
// stored block at or before the time (kN1, NULL: none) and its epoch (kN2),
// indexed_block's epoch as get_status answers it (kN3), the first stored
// block after the time (kN4, NULL: none) and its epoch (kN5).
}  // namespace balances_column

// Column positions of the page statements' result: one header row, then the
// events. The account is the one asked for (account = $1): it is not fetched.
namespace page_column {
inline constexpr int kKind = 0;  // op type code * 100 + role code; NULL on the header
inline constexpr int kBlockNum = 1;
inline constexpr int kBlockSeq = 2;
inline constexpr int kTrxId = 3;
inline constexpr int kOpPlace = 4;  // virtual_op * 2^32 + op_in_trx
inline constexpr int kEpoch = 5;
inline constexpr int kAmount = 6;
inline constexpr int kSymbol = 7;
inline constexpr int kVestingAmount = 8;
inline constexpr int kVestingSymbol = 9;
inline constexpr int kCounterparty = 10;
inline constexpr int kMemo = 11;
inline constexpr int kAuthor = 12;
inline constexpr int kPermlink = 13;
inline constexpr int kAssets = 14;
inline constexpr int kCount = 15;
}  // namespace page_column

// The push statement's (wh_push) columns after page_column's.
namespace push_column {
inline constexpr int kAccount = page_column::kCount;  // the event's account
inline constexpr int kWide = page_column::kCount + 1; // outside spec 000's types ("t"/"f")
inline constexpr int kCount = page_column::kCount + 2;
}  // namespace push_column

// The header row's values, in the event columns.
namespace page_header {
inline constexpr int kIndexedBlock = page_column::kBlockNum;
// The highest block the answering database holds, for a standby's next page
// only (else NULL): behind_cursor() compares the cursor's block.
inline constexpr int kStoredBlock = page_column::kBlockSeq;
inline constexpr int kAccountId = page_column::kOpPlace;  // NULL: no such account
inline constexpr int kGeneration = page_column::kEpoch;
}  // namespace page_header

// Column positions of the status statement's result.
namespace status_column {
inline constexpr int kIndexedBlock = 0;
inline constexpr int kIndexedEpoch = 1;
inline constexpr int kHeadBlock = 2;
inline constexpr int kHeadEpoch = 3;
inline constexpr int kNodeFresh = 4;
inline constexpr int kNowEpoch = 5;
inline constexpr int kLoadingFrom = 6;
inline constexpr int kLoadingTo = 7;
inline constexpr int kLoadingBlocks = 8;
inline constexpr int kOutdatedFrom = 9;
inline constexpr int kOutdatedTo = 10;
inline constexpr int kReplayDelay = 11;  // seconds a standby's replay is behind
inline constexpr int kLoadingShardsFrom = 12;  // the first block of the shard holding kLoadingFrom
}  // namespace status_column

// Column positions of the database statement's result (one row).
namespace database_column {
inline constexpr int kStandby = 0;        // pg_is_in_recovery()
inline constexpr int kReplayDelayUs = 1;  // microseconds a standby's replay is behind (0: none)
}  // namespace database_column

}  // namespace wallet::api
