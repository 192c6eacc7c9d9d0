// push_bench_client: the clients of `t/bench/run push` (t/bench/push.sh).
// Opens CLIENTS WebSocket connections to nginx's router endpoint, spread over
// ADDRESSES source addresses 127.0.0.1, 127.0.0.2, ... (the router caps
// connections per client address), and subscribes each to PER_CLIENT
// accounts of the ACCOUNTS file (client i: accounts i*PER_CLIENT ... modulo
// their number) with wallet_history.subscribe; one epoll loop reads them
// all. Its own connection to PostgreSQL LISTENs on the writers' channel
// (migration 0025) in a thread of its own: a block's commit time is the
// writer's clock at its NOTIFY naming the block, its transaction's last
// statement (the payload's "committed_us", migration 0028; a payload
// without it: the moment it arrives here, as at nginx's listener). Times
// are the realtime clock's (the writer's and this host's: one machine).
// Framing is the router's own codec (router_websocket.hpp: masked client
// frames, the client-side decoder).
//
//   push_bench_client PORT CLIENTS ADDRESSES ACCOUNTS_FILE PER_CLIENT DB_URL READY_FILE AFTER_BLOCK
//
// Writes READY_FILE once every client is subscribed; on SIGUSR1 it waits
// until no notification came for 2 s, then compares what each client got
// with the store: every event of its accounts above AFTER_BLOCK (where a
// subscription without a cursor starts: the highest block stored while the
// clients subscribe, push.sh holds the chain still meanwhile), spec types
// only (a subscription without op_types or scope), once each. Prints one line: clients=.. subscribed=..
// notifications=.. expected=.. lost=.. repeated=.. unexpected=.. closed=..
// delay_p50_ms=.. delay_p99_ms=.. delay_max_ms=.. no_commit_time=..
// notifications_per_s=.. mean_bytes=.. seconds=..; then it writes
// READY_FILE.done and holds the connections open, idle (answering pings),
// until SIGTERM (push.sh's echo runs beside them).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "router_websocket.hpp"
#include "ws_load_client.hpp"
#include "wallet/handles.hpp"
#include "wallet/pg.hpp"
#include "wallet/wallet_event.hpp"

namespace {

namespace ws = router::ws;

// The realtime clock (a writer's commit times are its).
std::uint64_t now_us() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// One event of one account: the store's key.
struct Key {
    std::int32_t block_num = 0;
    std::int32_t block_seq = 0;
    std::int32_t role = 0;
    std::uint32_t account = 0;  // index in the accounts file
    auto operator<=>(const Key&) const = default;
};

struct Received {
    std::uint32_t client = 0;
    Key key;
    std::uint64_t at_us = 0;
};

struct Client {
    int fd = -1;
    std::uint32_t index = 0;
    std::unique_ptr<ws::Decoder> decoder;
    bool subscribed = false;
    bool closed = false;
    std::uint64_t retry_at_us = 0;  // a refused subscribe is sent again then
};

// The number after `"name":` in `text` (the event's fields are flat and unique).
std::optional<long> number_after(std::string_view text, std::string_view name) {
    const auto at = text.find(name);
    if (at == std::string_view::npos) return std::nullopt;
    const char* p = text.data() + at + name.size();
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p) return std::nullopt;
    return v;
}

std::optional<std::string_view> string_after(std::string_view text, std::string_view name) {
    const auto at = text.find(name);
    if (at == std::string_view::npos) return std::nullopt;
    const auto start = at + name.size();
    const auto end = text.find('"', start);
    if (end == std::string_view::npos) return std::nullopt;
    return text.substr(start, end - start);
}

// The commit time of each block: the first NOTIFY naming it, its
// "committed_us" or when it arrived.
class CommitClock {
public:
    explicit CommitClock(std::string url) : url_(std::move(url)) {}

    bool start() {
        conn_ = wallet::PgConnPtr(PQconnectdb(url_.c_str()));
        if (PQstatus(conn_.get()) != CONNECTION_OK) {
            std::fprintf(stderr, "push_bench_client: LISTEN connection: %s", PQerrorMessage(conn_.get()));
            return false;
        }
        wallet::PgResultPtr r(PQexec(conn_.get(), "LISTEN wallet_events"));
        if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) return false;
        thread_ = std::thread([this] { run(); });
        return true;
    }

    void stop() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }

    std::unordered_map<std::int32_t, std::uint64_t> times() {
        std::lock_guard lock(mutex_);
        return times_;
    }

    // Notifications naming blocks that carried their commit time.
    std::uint64_t from_payload() {
        std::lock_guard lock(mutex_);
        return from_payload_;
    }

private:
    void run() {
        const int fd = PQsocket(conn_.get());
        while (!stop_) {
            fd_set r;
            FD_ZERO(&r);
            FD_SET(fd, &r);
            timeval tv{0, 100000};
            if (select(fd + 1, &r, nullptr, nullptr, &tv) <= 0) continue;
            const std::uint64_t at = now_us();
            if (PQconsumeInput(conn_.get()) == 0) return;
            while (PGnotify* n = PQnotifies(conn_.get())) {
                const std::string_view payload(n->extra);
                // {"first" : 5, "last" : 7, "rewound_above" : null}
                const auto first = number_after(payload, "\"first\" : ");
                const auto last = number_after(payload, "\"last\" : ");
                const auto committed = number_after(payload, "\"committed_us\" : ");
                if (first && last) {
                    std::lock_guard lock(mutex_);
                    if (committed) ++from_payload_;
                    const std::uint64_t time = committed ? static_cast<std::uint64_t>(*committed) : at;
                    for (long b = *first; b <= *last; ++b) times_.emplace(static_cast<std::int32_t>(b), time);
                }
                PQfreemem(n);
            }
        }
    }

    std::string url_;
    wallet::PgConnPtr conn_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::unordered_map<std::int32_t, std::uint64_t> times_;
    std::uint64_t from_payload_ = 0;
};

double percentile(std::vector<std::uint64_t>& sorted, double p) {
    if (sorted.empty()) return 0;
    const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
    return static_cast<double>(sorted[std::min(i, sorted.size() - 1)]) / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 9) {
        std::fprintf(stderr, "usage: push_bench_client PORT CLIENTS ADDRESSES ACCOUNTS_FILE PER_CLIENT DB_URL READY_FILE "
                             "AFTER_BLOCK\n");
        return 2;
    }
    const int port = std::atoi(argv[1]);
    const auto clients_n = static_cast<std::uint32_t>(std::atoi(argv[2]));
    const int addresses = std::max(1, std::atoi(argv[3]));
    const auto per_client = static_cast<std::uint32_t>(std::atoi(argv[5]));
    const std::string db_url = argv[6];
    const std::string ready_file = argv[7];
    const std::string after_text = argv[8];
    std::vector<std::string> accounts;
    std::unordered_map<std::string, std::uint32_t> account_index;
    {
        std::ifstream in(argv[4]);
        for (std::string line; std::getline(in, line);) {
            if (line.empty()) continue;
            account_index.emplace(line, static_cast<std::uint32_t>(accounts.size()));
            accounts.push_back(line);
        }
    }
    if (accounts.empty() || clients_n == 0 || per_client == 0) {
        std::fprintf(stderr, "push_bench_client: no accounts or clients\n");
        return 2;
    }
    auto accounts_of = [&](std::uint32_t client) {
        std::vector<std::uint32_t> out;
        for (std::uint32_t k = 0; k < per_client; ++k) {
            out.push_back(static_cast<std::uint32_t>((static_cast<std::uint64_t>(client) * per_client + k) % accounts.size()));
        }
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    };
    auto subscribe_frame = [&](std::uint32_t client) {
        std::string message = R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.subscribe","params":{"accounts":[)";
        bool first = true;
        for (std::uint32_t a : accounts_of(client)) {
            if (!first) message += ',';
            first = false;
            message += '"' + accounts[a] + '"';
        }
        message += "]}}";
        return ws::encode_frame(ws::Opcode::Text, message, true);
    };

    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGUSR1);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigprocmask(SIG_BLOCK, &signals, nullptr);
    const int sfd = signalfd(-1, &signals, SFD_NONBLOCK);

    CommitClock clock(db_url);
    if (!clock.start()) return 1;

    const int ep = epoll_create1(0);
    epoll_event sev{};
    sev.events = EPOLLIN;
    sev.data.ptr = nullptr;
    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &sev);

    std::vector<Client> clients(clients_n);
    for (std::uint32_t i = 0; i < clients_n; ++i) {
        Client& c = clients[i];
        c.index = i;
        ws_load::Connection connection =
            ws_load::connect_watched(ep, &c, port, "/ws", INADDR_LOOPBACK + i % static_cast<std::uint32_t>(addresses));
        if (!connection.error.empty()) {
            std::fprintf(stderr, "push_bench_client: client %u: %s\n", i, connection.error.c_str());
            return 1;
        }
        c.fd = connection.fd;
        c.decoder = std::move(connection.decoder);
        ws_load::send_all(c.fd, subscribe_frame(i));
    }
    std::fprintf(stderr, "push_bench_client: %u connections open\n", clients_n);

    std::vector<Received> received;
    received.reserve(1 << 20);
    std::uint64_t bytes = 0, subscribed = 0, refused = 0, closed = 0, others = 0;
    bool ready = false, stopping = false, quit = false;
    std::uint64_t last_notification_us = now_us(), ready_us = 0, stop_us = 0;
    constexpr std::uint64_t kQuietUs = 2000000;
    std::vector<epoll_event> events(256);
    char buffer[65536];
    // Compares what each client got with the store and prints the line.
    const auto report = [&]() -> bool {
        clock.stop();

        // Every client's expected events: its accounts' rows above AFTER_BLOCK.
        auto times = clock.times();
        wallet::PgConnPtr db(PQconnectdb(db_url.c_str()));
        std::string literal = "{";
        for (std::size_t i = 0; i < accounts.size(); ++i) {
            if (i > 0) literal += ',';
            literal += accounts[i];
        }
        literal += '}';
        const char* params[2] = {literal.c_str(), after_text.c_str()};
        wallet::PgResultPtr rows(PQexecParams(db.get(),
                                              "SELECT a.name, e.block_num, e.block_seq, e.role FROM wallet_events e"
                                              " JOIN wallet_accounts a ON a.id = e.account_id"
                                              " WHERE a.name = ANY($1::text[]) AND e.block_num > $2::integer AND NOT e.wide",
                                              2, nullptr, params, nullptr, nullptr, 0));
        if (PQresultStatus(rows.get()) != PGRES_TUPLES_OK) {
            std::fprintf(stderr, "push_bench_client: store: %s\n", PQerrorMessage(db.get()));
            return false;
        }
        std::vector<std::vector<Key>> by_account(accounts.size());
        for (int r = 0; r < PQntuples(rows.get()); ++r) {
            const auto idx = account_index.at(PQgetvalue(rows.get(), r, 0));
            by_account[idx].push_back(Key{std::atoi(PQgetvalue(rows.get(), r, 1)), std::atoi(PQgetvalue(rows.get(), r, 2)),
                                          std::atoi(PQgetvalue(rows.get(), r, 3)), idx});
        }
        std::sort(received.begin(), received.end(),
                  [](const Received& a, const Received& b) { return std::tie(a.client, a.key) < std::tie(b.client, b.key); });
        std::uint64_t expected = 0, lost = 0, repeated = 0, unexpected = 0;
        std::size_t at = 0;
        for (std::uint32_t client = 0; client < clients_n; ++client) {
            std::vector<Key> want;
            for (std::uint32_t a : accounts_of(client)) want.insert(want.end(), by_account[a].begin(), by_account[a].end());
            std::sort(want.begin(), want.end());
            expected += want.size();
            std::vector<Key> got;
            while (at < received.size() && received[at].client == client) got.push_back(received[at++].key);
            std::size_t w = 0, g = 0;
            while (w < want.size() || g < got.size()) {
                if (g < got.size() && g > 0 && got[g] == got[g - 1]) {
                    ++repeated;
                    ++g;
                } else if (w < want.size() && (g == got.size() || want[w] < got[g])) {
                    if (lost++ < 10) {
                        std::fprintf(stderr, "push_bench_client: lost: client %u block %d seq %d role %d account %s\n", client,
                                     want[w].block_num, want[w].block_seq, want[w].role, accounts[want[w].account].c_str());
                    }
                    ++w;
                } else if (w == want.size() || got[g] < want[w]) {
                    ++unexpected;
                    ++g;
                } else {
                    ++w;
                    ++g;
                }
            }
        }
        std::vector<std::uint64_t> delays;
        std::uint64_t no_commit_time = 0, first_us = UINT64_MAX, last_us = 0;
        for (const auto& r : received) {
            first_us = std::min(first_us, r.at_us);
            last_us = std::max(last_us, r.at_us);
            auto it = times.find(r.key.block_num);
            if (it == times.end()) {
                ++no_commit_time;
                continue;
            }
            delays.push_back(r.at_us > it->second ? r.at_us - it->second : 0);
        }
        std::sort(delays.begin(), delays.end());
        const double seconds = last_us > first_us ? static_cast<double>(last_us - first_us) / 1e6 : 0;
        std::printf("clients=%u subscribed=%llu notifications=%zu expected=%llu lost=%llu repeated=%llu unexpected=%llu "
                    "closed=%llu others=%llu delay_p50_ms=%.1f delay_p99_ms=%.1f delay_max_ms=%.1f no_commit_time=%llu "
                    "notifications_per_s=%.0f mean_bytes=%.0f seconds=%.1f after_block=%s ready_to_stop_s=%.1f commit_times_from_payload=%llu\n",
                    clients_n, static_cast<unsigned long long>(subscribed), received.size(),
                    static_cast<unsigned long long>(expected), static_cast<unsigned long long>(lost),
                    static_cast<unsigned long long>(repeated), static_cast<unsigned long long>(unexpected),
                    static_cast<unsigned long long>(closed), static_cast<unsigned long long>(others),
                    percentile(delays, 0.50), percentile(delays, 0.99), delays.empty() ? 0.0 : static_cast<double>(delays.back()) / 1000.0,
                    static_cast<unsigned long long>(no_commit_time),
                    seconds > 0 ? static_cast<double>(received.size()) / seconds : 0.0,
                    received.empty() ? 0.0 : static_cast<double>(bytes) / static_cast<double>(received.size()), seconds,
                    after_text.c_str(), stop_us > ready_us ? static_cast<double>(stop_us - ready_us) / 1e6 : 0.0,
                    static_cast<unsigned long long>(clock.from_payload()));
        std::fflush(stdout);
        return true;
    };

    bool reported = false;
    while (!quit) {
        const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 50);
        const std::uint64_t t = now_us();
        for (std::size_t e = 0; e < static_cast<std::size_t>(std::max(n, 0)); ++e) {
            if (events[e].data.ptr == nullptr) {
                signalfd_siginfo info{};
                while (read(sfd, &info, sizeof(info)) == sizeof(info)) {
                    if (info.ssi_signo == SIGUSR1) {
                        stopping = true;
                        stop_us = t;
                    } else {
                        quit = true;
                    }
                }
                continue;
            }
            auto* c = static_cast<Client*>(events[e].data.ptr);
            const std::uint64_t at = now_us();
            for (;;) {
                ssize_t got = recv(c->fd, buffer, sizeof(buffer), 0);
                if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
                    if (!c->closed) ++closed;
                    c->closed = true;
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, nullptr);
                    break;
                }
                if (got < 0) break;
                c->decoder->feed(std::string_view(buffer, static_cast<std::size_t>(got)));
            }
            ws::Event event;
            std::string replies;
            for (;;) {
                const auto status = c->decoder->next(event);
                if (status != ws::Decoder::Status::Event) break;
                if (event.kind == ws::Event::Kind::Ping) {
                    replies += ws::encode_frame(ws::Opcode::Pong, event.payload, true);
                    continue;
                }
                if (event.kind == ws::Event::Kind::Close) {
                    std::fprintf(stderr, "push_bench_client: client %u closed by the server: %u %s\n", c->index,
                                 event.close_code, event.payload.c_str());
                    if (!c->closed) ++closed;
                    c->closed = true;
                    continue;
                }
                if (event.kind != ws::Event::Kind::Message) continue;
                const std::string_view text = event.payload;
                if (text.find(R"("method":"wallet_history.event")") != std::string_view::npos) {
                    const auto block = number_after(text, "\"block_num\":");
                    const auto seq = number_after(text, "\"block_seq\":");
                    const auto role = string_after(text, "\"role\":\"");
                    const auto account = string_after(text, "\"account\":\"");
                    const auto parsed_role = role ? wallet::parse_role(*role) : std::nullopt;
                    const auto idx = account ? account_index.find(std::string(*account)) : account_index.end();
                    if (!block || !seq || !parsed_role || idx == account_index.end()) {
                        ++others;
                        continue;
                    }
                    received.push_back(Received{c->index,
                                                Key{static_cast<std::int32_t>(*block), static_cast<std::int32_t>(*seq),
                                                    wallet::role_code(*parsed_role), idx->second},
                                                at});
                    bytes += text.size();
                    last_notification_us = at;
                } else if (text.find(R"("result":{"subscription")") != std::string_view::npos) {
                    c->subscribed = true;
                    ++subscribed;
                } else if (!c->subscribed && text.find(R"("error")") != std::string_view::npos) {
                    // Refused (a rate limit): sent again in a second.
                    if (refused++ < 5) std::fprintf(stderr, "push_bench_client: subscribe refused: %s\n", event.payload.c_str());
                    c->retry_at_us = at + 1000000;
                } else {
                    ++others;
                }
            }
            if (!replies.empty() && !c->closed) ws_load::send_all(c->fd, replies);
        }
        if (!ready) {
            for (auto& c : clients) {
                if (!c.subscribed && !c.closed && c.retry_at_us != 0 && c.retry_at_us <= t) {
                    c.retry_at_us = 0;
                    ws_load::send_all(c.fd, subscribe_frame(c.index));
                }
            }
            if (subscribed == clients_n) {
                ready = true;
                ready_us = t;
                std::ofstream(ready_file) << "ready\n";
                std::fprintf(stderr, "push_bench_client: %u clients subscribed (%llu refused first)\n", clients_n,
                             static_cast<unsigned long long>(refused));
            }
        }
        if (stopping && !reported && t > stop_us + kQuietUs && t > last_notification_us + kQuietUs) {
            // Reported; the connections stay open, idle, until SIGTERM.
            reported = true;
            if (!report()) return 1;
            std::ofstream(ready_file + ".done") << "done\n";
        }
    }
    if (!reported && !report()) return 1;
    for (auto& c : clients) close(c.fd);
    return 0;
}
