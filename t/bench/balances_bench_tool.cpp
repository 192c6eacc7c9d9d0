// balances_bench_tool (t/bench/balances.sh): the synthetic chain's genesis
// balances as SQL, stored as its operator stores them (the balances tests'
// support: snapshots at block 0 of every account, before anything loads).
//   balances_bench_tool genesis SEED ACCOUNTS   -> SQL on stdout
#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/balances_support.hpp"

int main(int argc, char** argv) {
    if (argc != 4 || std::string(argv[1]) != "genesis") {
        std::fprintf(stderr, "usage: balances_bench_tool genesis SEED ACCOUNTS\n");
        return 2;
    }
    sim::SyntheticOptions options;
    options.seed = std::strtoull(argv[2], nullptr, 10);
    options.accounts = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));
    options.ledger = true;
    const sim::SyntheticChain chain(options);
    std::fputs(balances_test::genesis_runs_sql(chain).c_str(), stdout);
    std::fputs(";\n", stdout);
    return 0;
}
