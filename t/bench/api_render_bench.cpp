// Worker CPU spent turning one page of 50 events (a libpq result, as the
// wallet_history statements return it) into the JSON-RPC response, next to a
// plain copy of the same number of bytes (the baseline: what the response
// costs at the very least). Run by t/bench/api.sh; prints
// `render_ns=<per page> copy_ns=<per page> render_bytes=<n>`.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <libpq-fe.h>

#include "api_response.hpp"
#include "api_sql.hpp"
#include "wallet/operation_types.hpp"
#include "wallet/wallet_event.hpp"

namespace {

namespace api = wallet::api;

struct ResultOwner {
    PGresult* result;
    ~ResultOwner() { PQclear(result); }
};

// 51 rows (a page of 50 plus the look-ahead row), shaped like the big
// account's first page in t/bench/api.sh.
PGresult* sample_page() {
    namespace c = api::page_column;
    PGresult* result = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
    std::vector<PGresAttDesc> attrs(static_cast<std::size_t>(c::kCount));
    static const char* names[c::kCount] = {"kind",           "block_num",      "block_seq", "trx_id", "op_place",
                                           "epoch",          "amount",         "symbol",    "vesting_amount",
                                           "vesting_symbol", "counterparty",   "memo",      "author", "permlink",
                                           "assets"};
    for (std::size_t i = 0; i < attrs.size(); ++i) {
        attrs[i] = PGresAttDesc{};
        attrs[i].name = const_cast<char*>(names[i]);
    }
    PQsetResultAttrs(result, c::kCount, attrs.data());
    // The header row, then the events.
    PQsetvalue(result, 0, api::page_header::kIndexedBlock, const_cast<char*>("31536000"), 8);
    for (int row = 1; row <= 51; ++row) {
        const bool reward = row % 3 == 2;
        const std::string block = std::to_string(31533176 - row * 40);
        const std::string seq = std::to_string(59 - row % 50);
        const std::string epoch = std::to_string(1672436327 - row * 120);
        auto set = [&](int column, const std::string& value) {
            PQsetvalue(result, row, column, const_cast<char*>(value.c_str()), static_cast<int>(value.size()));
        };
        auto set_null = [&](int column) { PQsetvalue(result, row, column, nullptr, -1); };
        set(c::kBlockNum, block);
        set(c::kBlockSeq, seq);
        set(c::kEpoch, epoch);
        if (reward) {
            set(c::kKind, std::to_string(wallet::operation_type_id("curation_reward") * 100 +
                                         wallet::role_code(wallet::Role::Curator)));
            set_null(c::kTrxId);
            set(c::kOpPlace, "12884901888");  // virtual_op 3
            set_null(c::kAmount);
            set_null(c::kSymbol);
            set(c::kVestingAmount, "1234.567891");
            set(c::kVestingSymbol, "VESTS");
            set_null(c::kCounterparty);
            set_null(c::kMemo);
            set(c::kAuthor, "author" + std::to_string(row));
            set(c::kPermlink, "a-post-about-something-" + std::to_string(row));
            set(c::kAssets, R"([{"field": "reward", "amount": "1234.567891", "symbol": "VESTS"}])");
        } else {
            set(c::kKind, std::to_string(wallet::operation_type_id("transfer") * 100 +
                                         wallet::role_code(row % 2 ? wallet::Role::Sender : wallet::Role::Receiver)));
            set(c::kTrxId, "bfde1e6b34ffa80b9c9c609d45ab895900000000");
            set(c::kOpPlace, "0");
            set(c::kAmount, "44.472000");
            set(c::kSymbol, "HIVE");
            set_null(c::kVestingAmount);
            set_null(c::kVestingSymbol);
            set(c::kCounterparty, "peer873");
            set(c::kMemo, "payment " + std::to_string(199999 - row));
            set_null(c::kAuthor);
            set_null(c::kPermlink);
            set(c::kAssets, R"([{"field": "amount", "amount": "44.472", "symbol": "HIVE"}])");
        }
    }
    return result;
}

template <typename F>
double ns_per_call(F&& f, int iterations) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) f();
    const auto end = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(end - start).count() / iterations;
}

}  // namespace

int main(int argc, char** argv) {
    ResultOwner rows{sample_page()};
    wallet::CursorCodec cursors("bench-cursor-secret-0123456789");
    api::PageQuery query;
    query.account = "bigwhale";
    query.limit = 50;
    std::size_t bytes = 0;
    api::ResponseBuffer buffer;  // one per worker, as in the module
    auto render = [&] {
        // The module copies the page once, into nginx's buffer.
        std::string out(api::write_page_response(buffer, "1", api::Method::GetWalletHistory, query, rows.result, cursors));
        bytes = out.size();
    };
    render();
    if (argc > 1 && std::strcmp(argv[1], "--print") == 0) {  // to compare renderers byte for byte
        const auto page = api::write_page_response(buffer, "1", api::Method::GetWalletHistory, query, rows.result, cursors);
        std::printf("%.*s\n", static_cast<int>(page.size()), page.data());
        return 0;
    }
    if (argc > 1 && std::strcmp(argv[1], "--count") == 0) {  // fixed work, for instruction counts (callgrind)
        for (int i = 0; i < 1000; ++i) render();
        return 0;
    }
    std::string source(bytes, 'x');
    auto copy = [&] {
        std::string out(source);
        bytes = out.size();
    };
    constexpr int kIterations = 20000;
    ns_per_call(render, 2000);  // warm-up
    // The best of several rounds: the least disturbed by a shared machine.
    double render_ns = 1e18;
    double copy_ns = 1e18;
    for (int round = 0; round < 5; ++round) {
        render_ns = std::min(render_ns, ns_per_call(render, kIterations));
        copy_ns = std::min(copy_ns, ns_per_call(copy, kIterations));
    }
    std::printf("render_ns=%.0f copy_ns=%.0f render_bytes=%zu\n", render_ns, copy_ns, bytes);
    return 0;
}
