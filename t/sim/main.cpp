// hive-node-sim: a stand-in for hived's JSON-RPC, on 127.0.0.1 by default (see README.md).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "node.hpp"
#include "wallet/http_server.hpp"

namespace {

constexpr const char* kUsage = R"(usage: hive-node-sim [options]
Chain (one of):
  --fixtures DIR            real-data chain from t/fixtures/hive (head 5,000,000)
  --synthetic               synthetic chain (the default without --fixtures)
  --seed N                  synthetic chain seed (default 1)
  --length N                initial head block (synthetic default 1000; real: the fixtures' head)
  --naming current|legacy   field names of current hived or of a Steem-era node (synthetic chain)
  --pathological-every N    block N is huge when N % every == every/2 (default 100000, 0 = never)
  --accounts N              accounts of the synthetic chain (default 20000, at least 100)
  --full-block-every N      only every Nth block has transactions and payouts, the others
                            just their producer_reward (default 1: all full)
  --history-blocks N        synthetic account history covers the latest N blocks (default 20000)
  --ledger                  synthetic chain kept by a ledger: payable operations, find_accounts/get_accounts
Head and irreversibility:
  --block-interval-ms MS    one new block per MS (default 3000; 0 = only on command)
  --epoch UNIX_SECONDS      the head advances from this instant (same value for a node pool)
  --lib-lag N               last irreversible block = head - N (real default 20, synthetic 1)
  --no-irreversible         report no last irreversible block (0)
Pool member (with --epoch, the members share a head):
  --head-offset N           this node's head = the shared head + N (negative: lagging)
  --history-lag N           get_ops_in_block answers an empty list for the latest N blocks (HAfAH behind hived)
Proxy in front (README.md, "Proxy personalities"):
  --proxy KIND              none (bare hived: Connection: close), drone, jussi, caddy (rate limit + Drone)
  --batch-limit N           largest batch accepted (drone 100, jussi 50)
  --rate-limit N            requests per window per client address (caddy 600)
  --rate-window-ms MS       the rate limit's window (default 60000)
  --call-latency-ms MS      the backend's time per call (serial items add up; jussi's run at once)
Faults on a share of JSON-RPC requests (deterministic):
  --fault-rate R            share in [0, 1]
  --fault-kinds a,b,...     delay,hang,http_500,http_503,rpc_error,truncated,malformed,oversized,wrong_block
  --fault-seed N            --fault-delay-ms MS  --fault-hang-ms MS  --fault-oversize-bytes N
  --fault-methods m,...     only requests calling these methods
  --fault-count N           only N faults
Server:
  --host ADDR               listening address (default 127.0.0.1; 0.0.0.0 in a container)
  --port N                  TCP port (0, the default, picks a free one)
  --max-connections N       concurrent connections (default 256)
)";

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t comma = text.find(',', start);
        if (comma == std::string::npos) comma = text.size();
        if (comma > start) parts.push_back(text.substr(start, comma - start));
        start = comma + 1;
    }
    return parts;
}

[[noreturn]] void fail(const std::string& message) {
    std::cerr << "hive-node-sim: " << message << "\n" << kUsage;
    std::exit(2);
}

std::uint64_t number(const std::string& flag, const std::string& text) {
    try {
        std::size_t used = 0;
        unsigned long long value = std::stoull(text, &used);
        if (used != text.size()) throw std::invalid_argument(text);
        return value;
    } catch (const std::exception&) {
        fail(flag + " needs a number, got '" + text + "'");
    }
}

}  // namespace

int main(int argc, char** argv) {
    sim::NodeOptions options;
    wallet::HttpServerOptions server_options;
    server_options.host = "127.0.0.1";
    bool synthetic_requested = false;
    bool naming_given = false;
    std::optional<std::size_t> batch_limit;
    std::optional<std::uint32_t> rate_limit;
    std::optional<std::chrono::milliseconds> rate_window;
    std::optional<std::chrono::milliseconds> call_latency;

    std::vector<std::string> args(argv + 1, argv + argc);
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& flag = args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size()) fail(flag + " needs a value");
            return args[++i];
        };
        if (flag == "--help" || flag == "-h") {
            std::cout << kUsage;
            return 0;
        } else if (flag == "--fixtures") {
            options.fixtures = value();
        } else if (flag == "--synthetic") {
            synthetic_requested = true;
        } else if (flag == "--ledger") {
            options.synthetic.ledger = true;
        } else if (flag == "--seed") {
            options.synthetic.seed = number(flag, value());
        } else if (flag == "--length" || flag == "--head") {
            options.initial_head = static_cast<std::uint32_t>(number(flag, value()));
        } else if (flag == "--naming") {
            std::string naming = value();
            if (naming != "current" && naming != "legacy") fail("--naming is current or legacy");
            options.synthetic.naming = naming == "legacy" ? sim::Naming::legacy : sim::Naming::current;
            naming_given = true;
        } else if (flag == "--pathological-every") {
            options.synthetic.pathological_every = static_cast<std::uint32_t>(number(flag, value()));
        } else if (flag == "--accounts") {
            options.synthetic.accounts = static_cast<std::uint32_t>(number(flag, value()));
            if (options.synthetic.accounts < 100) fail("--accounts must be at least 100");
        } else if (flag == "--full-block-every") {
            options.synthetic.full_block_every = static_cast<std::uint32_t>(number(flag, value()));
            if (options.synthetic.full_block_every == 0) fail("--full-block-every must be at least 1");
        } else if (flag == "--history-blocks") {
            options.history_blocks = static_cast<std::uint32_t>(number(flag, value()));
        } else if (flag == "--block-interval-ms") {
            options.block_interval = std::chrono::milliseconds(number(flag, value()));
        } else if (flag == "--epoch") {
            options.epoch = std::chrono::system_clock::time_point(std::chrono::seconds(number(flag, value())));
        } else if (flag == "--lib-lag") {
            options.lib_lag = static_cast<std::uint32_t>(number(flag, value()));
        } else if (flag == "--head-offset") {
            std::string text = value();
            const bool negative = !text.empty() && text[0] == '-';
            const auto magnitude = static_cast<std::int64_t>(number(flag, negative ? text.substr(1) : text));
            options.head_offset = negative ? -magnitude : magnitude;
        } else if (flag == "--history-lag") {
            options.history_lag = static_cast<std::uint32_t>(number(flag, value()));
        } else if (flag == "--proxy") {
            std::string name = value();
            auto kind = sim::parse_proxy_kind(name);
            if (!kind) fail("--proxy is none, drone, jussi or caddy");
            options.proxy = sim::ProxyOptions::of(*kind);
        } else if (flag == "--batch-limit") {
            batch_limit = number(flag, value());
        } else if (flag == "--rate-limit") {
            rate_limit = static_cast<std::uint32_t>(number(flag, value()));
        } else if (flag == "--rate-window-ms") {
            rate_window = std::chrono::milliseconds(number(flag, value()));
            if (rate_window->count() == 0) fail("--rate-window-ms must be at least 1");
        } else if (flag == "--call-latency-ms") {
            call_latency = std::chrono::milliseconds(number(flag, value()));
        } else if (flag == "--no-irreversible") {
            options.irreversible = false;
        } else if (flag == "--fault-rate") {
            std::string text = value();
            char* end = nullptr;
            double rate = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || *end != '\0' || rate < 0 || rate > 1)
                fail("--fault-rate needs a share in [0, 1]");
            options.faults.per_million = static_cast<std::uint32_t>(rate * 1000000.0 + 0.5);
        } else if (flag == "--fault-kinds") {
            for (const auto& name : split(value())) {
                auto kind = sim::parse_fault_kind(name);
                if (!kind) fail("unknown fault kind '" + name + "'");
                options.faults.kinds.push_back(*kind);
            }
        } else if (flag == "--fault-seed") {
            options.faults.seed = number(flag, value());
        } else if (flag == "--fault-delay-ms") {
            options.faults.delay = std::chrono::milliseconds(number(flag, value()));
        } else if (flag == "--fault-hang-ms") {
            options.faults.hang = std::chrono::milliseconds(number(flag, value()));
        } else if (flag == "--fault-oversize-bytes") {
            options.faults.oversize_bytes = number(flag, value());
        } else if (flag == "--fault-methods") {
            options.faults.methods = split(value());
        } else if (flag == "--fault-count") {
            options.faults.count = number(flag, value());
        } else if (flag == "--host") {
            server_options.host = value();
        } else if (flag == "--port") {
            server_options.port = static_cast<std::uint16_t>(number(flag, value()));
        } else if (flag == "--max-connections") {
            server_options.max_connections = number(flag, value());
        } else {
            fail("unknown option " + flag);
        }
    }
    // Explicit numbers override the personality's (given in any order).
    if (batch_limit) options.proxy.batch_limit = *batch_limit;
    if (rate_limit) options.proxy.rate_limit = *rate_limit;
    if (rate_window) options.proxy.rate_window = *rate_window;
    if (call_latency) options.proxy.call_latency = *call_latency;
    if (synthetic_requested && !options.fixtures.empty()) fail("--synthetic and --fixtures exclude each other");
    if (options.synthetic.ledger && !options.fixtures.empty()) fail("--ledger applies to the synthetic chain only");
    if (naming_given && !options.fixtures.empty() && options.synthetic.naming == sim::Naming::legacy)
        fail("--naming legacy applies to the synthetic chain only (the real chain is served as current hived)");
    if (options.faults.per_million > 0 && options.faults.kinds.empty()) fail("--fault-rate needs --fault-kinds");

    // Signals are taken by sigwait below; no thread may get them asynchronously.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    auto node = sim::Node::create(std::move(options));
    if (!node) {
        std::cerr << "hive-node-sim: " << node.error() << "\n";
        return 1;
    }
    sim::Node& simulator = *node.value();
    auto server = wallet::HttpServer::start(
        server_options, [&simulator](const wallet::HttpRequest& request, wallet::HttpResponse& response) {
            simulator.handle(request, response);
        });
    if (!server) {
        std::cerr << "hive-node-sim: " << server.error() << "\n";
        return 1;
    }
    std::cout << "hive-node-sim: " << simulator.describe() << "\n"
              << "listening on http://" << server_options.host << ":" << server.value()->port() << std::endl;

    int received = 0;
    sigwait(&signals, &received);
    server.value()->stop();
    return 0;
}
