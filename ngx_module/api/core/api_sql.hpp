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

#include "api_request.hpp"

namespace wallet::api {

struct StatementCall {
    const char* name = "";
    std::vector<std::optional<std::string>> params;  // text form; nullopt is SQL NULL
};

// Every statement: name -> "(parameter types) AS sql", the text that follows
// "PREPARE name" (the benchmark runs the same SQL).
const std::map<std::string, std::string>& prepared_statements();

StatementCall page_statement(const PageQuery& query);
StatementCall totals_statement(const PageQuery& query);
StatementCall status_statement(std::int64_t node_max_stall_ms);

// Column positions of the page statements' result.
namespace page_column {
// The account is the one asked for (account = $1): it is not fetched again.
inline constexpr int kIndexedBlock = 0;
inline constexpr int kRole = 1;
inline constexpr int kOpType = 2;
inline constexpr int kBlockNum = 3;
inline constexpr int kBlockSeq = 4;
inline constexpr int kTrxId = 5;
inline constexpr int kOpInTrx = 6;
inline constexpr int kVirtualOp = 7;
inline constexpr int kEpoch = 8;
inline constexpr int kAmount = 9;
inline constexpr int kSymbol = 10;
inline constexpr int kVestingAmount = 11;
inline constexpr int kVestingSymbol = 12;
inline constexpr int kCounterparty = 13;
inline constexpr int kMemo = 14;
inline constexpr int kAuthor = 15;
inline constexpr int kPermlink = 16;
inline constexpr int kAssets = 17;
inline constexpr int kCount = 18;  // the columns a response reads
// After them, for a next page only (NULL on a first page): the highest block
// the answering database holds (behind_cursor() compares the cursor's block).
inline constexpr int kStoredBlock = 18;
}  // namespace page_column

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
}  // namespace status_column

}  // namespace wallet::api
