// api_bench_tool: helpers of t/bench/api.sh.
//   accounts ACCOUNTS BIG_ACCOUNT
//       COPY text of wallet_accounts (id, name): a000001.. with ids 1..ACCOUNTS,
//       then BIG_ACCOUNT with id ACCOUNTS + 1.
//   copy ACCOUNTS EVENTS BIG_ACCOUNT BIG_EVENTS
//       COPY text (tab-separated) of synthetic wallet_events rows on stdout,
//       columns ts, account_id, block_num, block_seq, virtual_op, op_in_trx,
//       op_type, role, amount, symbol, vesting_amount, vesting_symbol, trx_id,
//       counterparty, memo, author, permlink, assets (migration 0004), wide
//       (false: spec 000's types only, migration 0015), accounts
//       by the ids above: EVENTS rows
//       over the ACCOUNTS accounts, plus BIG_EVENTS rows of BIG_ACCOUNT, spread
//       over about three years.
//   sql STATEMENT
//       The API's prepared statement with $n written :pn, for pgbench.
//   prepare STATEMENT
//       The API's statement as a PREPARE of that name, for psql.
//   cursor SECRET ACCOUNT EPOCH BLOCK SEQ ROLE
//       The get_wallet_history cursor (no window, no op_types) that resumes
//       after the given row, as the API would encode it.
//   load PORT BODY REQUESTS CONNECTIONS [PATH]
//       Sends exactly REQUESTS POSTs of BODY to 127.0.0.1:PORT (PATH, default /) over
//       CONNECTIONS keep-alive connections (each waits for its answer before
//       sending again), so that a worker's instruction count (callgrind) can
//       be divided by a known number of requests; wrk only runs for a time.
//       Fails on any answer but 200.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api_request.hpp"
#include "api_sql.hpp"
#include "wallet/cursor.hpp"

namespace {

constexpr long kStartEpoch = 1577836800;  // 2020-01-01T00:00:00Z
constexpr long kSpanSeconds = 3L * 365 * 86400;

struct Rng {
    unsigned long long state;
    unsigned long long next() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    }
};

void print_time(char* out, std::size_t size, long epoch) {
    auto t = wallet::Timestamp::from_seconds(epoch);
    std::snprintf(out, size, "%s", t ? t->to_iso_z().c_str() : "2020-01-01T00:00:00Z");
}

// Codes of migration 0004: hived's op ids and the role codes.
constexpr int kTransfer = 2;
constexpr int kAuthorReward = 51;
constexpr int kCurationReward = 52;
constexpr int kAuthor = 10;
constexpr int kCurator = 30;
constexpr int kReceiver = 70;
constexpr int kSender = 80;

// One row; `i` orders the rows of one account in time. `assets` is NULL
// where the store derives it from the amount columns (curation rewards and
// transfers: one asset, the amount column's), as the writer stores them.
void emit(long account_id, const char* account, long i, long per_account, Rng& rng) {
    const long epoch = kStartEpoch + (kSpanSeconds / per_account) * i + static_cast<long>(rng.next() % 3);
    const long block = (epoch - kStartEpoch) / 3 + 1;
    const int seq = static_cast<int>(rng.next() % 60);
    const unsigned kind = static_cast<unsigned>(rng.next() % 10);
    char ts[32];
    print_time(ts, sizeof ts, epoch);
    const unsigned long long units = rng.next() % 5000000 + 1;
    if (kind < 4) {
        std::printf("%s\t%ld\t%ld\t%d\t%d\t%d\t%d\t%d\t\\N\t\\N\t%llu.%06llu\tVESTS\t\\N\t\\N\t\\N\tauthor%llu\tpost-%ld\t\\N\tf\n",
                    ts, account_id, block, seq, seq + 1, seq, kCurationReward, kCurator, units / 1000000,
                    units % 1000000, units % 977, i);
    } else if (kind < 7) {  // with liquid payouts: assets kept
        const unsigned long long hbd = units % 20000;
        std::printf("%s\t%ld\t%ld\t%d\t%d\t%d\t%d\t%d\t\\N\t\\N\t%llu.%06llu\tVESTS\t\\N\t\\N\t\\N\t%s\tpost-%ld"
                    "\t[{\"field\": \"hbd_payout\", \"amount\": \"%llu.%03llu\", \"symbol\": \"HBD\"}, "
                    "{\"field\": \"hive_payout\", \"amount\": \"0.000\", \"symbol\": \"HIVE\"}, "
                    "{\"field\": \"vesting_payout\", \"amount\": \"%llu.%06llu\", \"symbol\": \"VESTS\"}]\tf\n",
                    ts, account_id, block, seq, seq + 1, seq, kAuthorReward, kAuthor, units / 1000000,
                    units % 1000000, account, i, hbd / 1000, hbd % 1000, units / 1000000, units % 1000000);
    } else {
        const unsigned long long milli = units % 100000;
        const unsigned long long trx_high = rng.next();
        const unsigned long long trx_low = rng.next();
        std::printf("%s\t%ld\t%ld\t%d\t0\t0\t%d\t%d\t%llu.%03llu\tHIVE\t\\N\t\\N\t\\\\x%016llx%016llx00000000\tpeer%llu"
                    "\tpayment %ld\t\\N\t\\N\t\\N\tf\n",
                    ts, account_id, block, seq, kTransfer, kind == 7 ? kReceiver : kSender, milli / 1000,
                    milli % 1000, trx_high, trx_low, units % 977, i);
    }
}

std::string account_name(long id) {
    char name[32];
    std::snprintf(name, sizeof name, "a%06ld", id);
    return name;
}

int accounts(long count, const std::string& big) {
    for (long a = 1; a <= count; ++a) std::printf("%ld\t%s\n", a, account_name(a).c_str());
    std::printf("%ld\t%s\n", count + 1, big.c_str());
    return 0;
}

int copy(long accounts, long events, const std::string& big, long big_events) {
    Rng rng{0x9e3779b97f4a7c15ULL};
    const long per_account = events / accounts;
    for (long a = 1; a <= accounts; ++a) {
        const std::string name = account_name(a);
        for (long i = 0; i < per_account; ++i) emit(a, name.c_str(), i, per_account, rng);
    }
    for (long i = 0; i < big_events; ++i) emit(accounts + 1, big.c_str(), i, big_events, rng);
    return 0;
}

// The API's statement "(type, ...) AS sql" of that name, or null.
const std::string* statement_named(const std::string& name) {
    const auto& all = wallet::api::prepared_statements();
    auto it = all.find(name);
    return it == all.end() ? nullptr : &it->second;
}

// The statement as a pgbench script: $N becomes :pN cast to the type PREPARE
// declares for it, so that pgbench plans exactly what the API runs (untyped
// pgbench parameters would let PostgreSQL infer other types and plans).
int sql(const std::string& name) {
    const std::string* found = statement_named(name);
    if (!found) return 1;
    const std::string& statement = *found;  // "(type, type, ...) AS sql"
    const std::size_t as = statement.find(" AS ");
    std::vector<std::string> types;
    std::string list = statement.substr(1, statement.rfind(')', as) - 1);
    for (std::size_t from = 0; from <= list.size();) {
        std::size_t comma = list.find(',', from);
        if (comma == std::string::npos) comma = list.size();
        std::string type = list.substr(from, comma - from);
        type.erase(0, type.find_first_not_of(' '));
        types.push_back(type);
        from = comma + 1;
    }
    const std::string text = statement.substr(as + 4);
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '$' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
            std::size_t end = i + 1;
            while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
            const std::size_t number = std::stoul(text.substr(i + 1, end - i - 1));
            out += "(:p" + text.substr(i + 1, end - i - 1) + "::" + types.at(number - 1) + ")";
            i = end - 1;
        } else {
            out += text[i];
        }
    }
    std::printf("%s;\n", out.c_str());
    return 0;
}

int prepare(const std::string& name) {
    const std::string* statement = statement_named(name);
    if (!statement) return 1;
    std::printf("PREPARE %s %s;\n", name.c_str(), statement->c_str());
    return 0;
}

int cursor(char** argv) {
    wallet::CursorCodec codec(argv[2]);
    wallet::api::PageQuery query;
    query.account = argv[3];
    wallet::CursorPosition position;
    auto ts = wallet::Timestamp::from_seconds(std::atol(argv[4]));
    if (!ts) return 1;
    position.timestamp = *ts;
    position.block_num = std::atol(argv[5]);
    position.block_seq = std::atoi(argv[6]);
    position.role = argv[7];
    std::printf("%s\n", codec.encode(position, query.account,
                                     wallet::api::query_fingerprint(wallet::api::Method::GetWalletHistory, query))
                             .c_str());
    return 0;
}

// One keep-alive connection of `load`: the answer read so far.
struct LoadConnection {
    int fd = -1;
    std::string in;
    bool waiting = false;
};

// The length of the complete response at the front of `in`, or 0 while it
// is incomplete; -1 for an answer but 200 (nginx writes Content-Length).
long complete_response(const std::string& in) {
    const std::size_t head_end = in.find("\r\n\r\n");
    if (head_end == std::string::npos) return 0;
    if (in.compare(0, 12, "HTTP/1.1 200") != 0) return -1;
    const std::size_t length_at = in.find("Content-Length: ");
    if (length_at == std::string::npos || length_at > head_end) return -1;
    const long total = static_cast<long>(head_end + 4) + std::atol(in.c_str() + length_at + 16);
    return static_cast<long>(in.size()) >= total ? total : 0;
}

int load(int port, const std::string& body, long requests, int connections, const std::string& path) {
    const std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    std::vector<LoadConnection> conns(static_cast<std::size_t>(connections));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    long sent = 0;
    long done = 0;
    auto send_next = [&](LoadConnection& conn) {
        if (sent == requests) return true;
        if (::send(conn.fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) return false;
        ++sent;
        conn.waiting = true;
        return true;
    };
    auto open = [&](LoadConnection& conn) {
        conn.fd = ::socket(AF_INET, SOCK_STREAM, 0);
        return conn.fd >= 0 && ::connect(conn.fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    };
    for (auto& conn : conns) {
        if (!open(conn) || !send_next(conn)) {
            std::perror("load: connect");
            return 1;
        }
    }
    std::vector<pollfd> polls(conns.size());
    char chunk[65536];
    while (done < requests) {
        for (std::size_t i = 0; i < conns.size(); ++i) polls[i] = {conns[i].waiting ? conns[i].fd : -1, POLLIN, 0};
        if (::poll(polls.data(), polls.size(), 60000) <= 0) {
            std::fprintf(stderr, "load: no answer for a minute\n");
            return 1;
        }
        for (std::size_t i = 0; i < conns.size(); ++i) {
            if (polls[i].revents == 0) continue;
            LoadConnection& conn = conns[i];
            const ssize_t got = ::recv(conn.fd, chunk, sizeof chunk, 0);
            if (got == 0 && conn.in.empty()) {
                // nginx closes a connection after keepalive_requests answers:
                // the request sent after the last one goes again on a new one.
                ::close(conn.fd);
                --sent;
                if (!open(conn) || !send_next(conn)) {
                    std::perror("load: reconnect");
                    return 1;
                }
                continue;
            }
            if (got <= 0) {
                std::fprintf(stderr, "load: connection closed\n");
                return 1;
            }
            conn.in.append(chunk, static_cast<std::size_t>(got));
            const long length = complete_response(conn.in);
            if (length < 0) {
                std::fprintf(stderr, "load: unexpected answer: %.200s\n", conn.in.c_str());
                return 1;
            }
            if (length == 0) continue;
            conn.in.erase(0, static_cast<std::size_t>(length));
            conn.waiting = false;
            ++done;
            if (!send_next(conn)) {
                std::perror("load: send");
                return 1;
            }
        }
    }
    for (auto& conn : conns) ::close(conn.fd);
    std::printf("%ld\n", done);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 6 && std::strcmp(argv[1], "copy") == 0) {
        return copy(std::atol(argv[2]), std::atol(argv[3]), argv[4], std::atol(argv[5]));
    }
    if (argc == 4 && std::strcmp(argv[1], "accounts") == 0) return accounts(std::atol(argv[2]), argv[3]);
    if (argc == 3 && std::strcmp(argv[1], "sql") == 0) return sql(argv[2]);
    if (argc == 3 && std::strcmp(argv[1], "prepare") == 0) return prepare(argv[2]);
    if (argc == 8 && std::strcmp(argv[1], "cursor") == 0) return cursor(argv);
    if ((argc == 6 || argc == 7) && std::strcmp(argv[1], "load") == 0) {
        return load(std::atoi(argv[2]), argv[3], std::atol(argv[4]), std::atoi(argv[5]), argc == 7 ? argv[6] : "/");
    }
    std::fprintf(stderr, "usage: api_bench_tool accounts|copy|sql|prepare|cursor|load ... (see the source)\n");
    return 2;
}
