// Test harness: real PostgreSQL, Redis, nginx and project daemons on loopback,
// each in its own temporary directory, torn down when the owning object dies
// (also when a test fails). Logs of every live process are printed when a
// test fails.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wallet/config.hpp"

namespace harness {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Absolute paths of the source tree, the build tree and the fixtures.
fs::path source_dir();
fs::path binary_dir();
fs::path fixtures_dir();        // t/fixtures/hive: real node responses
fs::path proxy_fixtures_dir();  // t/fixtures/proxy: predecessors' routing files

std::string read_file(const fs::path& path);
void write_file(const fs::path& path, const std::string& contents);
// `text` with every occurrence of `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to);

// A fresh directory, removed on destruction unless WALLET_TEST_KEEP=1.
class TempDir {
public:
    explicit TempDir(const std::string& prefix = "wallet-test");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

// A loopback TCP port that was free a moment ago.
std::uint16_t free_port();

// True in the sanitizer build (preset asan), where every process of ours runs
// several times slower: a run that proves a size rather than a code path
// takes a smaller size there (the code paths are the same).
bool sanitized_build();

// Keeps a loopback TCP port bound without listening, so that a connection to
// it is refused and free_port() gives it to no other server, also to none of
// a test running beside this one: a stopped server's port stays dead until
// the server starts on it again (closing the hold first).
class PortHold {
public:
    explicit PortHold(std::uint16_t port);  // throws when another socket has the port
    ~PortHold();
    PortHold(const PortHold&) = delete;
    PortHold& operator=(const PortHold&) = delete;

private:
    int fd_ = -1;
};

// Polls until the predicate holds or the timeout passes.
bool wait_until(const std::function<bool()>& predicate, std::chrono::milliseconds timeout = 20s,
                std::chrono::milliseconds interval = 20ms);

bool port_accepts(std::uint16_t port, const std::string& host = "127.0.0.1");

struct ProcessOptions {
    std::map<std::string, std::string> env;  // added to (or replacing) the inherited environment
    std::vector<std::string> unset_env;      // removed from the inherited environment
    fs::path log_path;                       // stdout and stderr; required
    std::optional<fs::path> cwd;
    bool unprivileged = false;               // drop to "nobody" when running as root
};

// A child process with its output in a log file. The destructor stops it.
class Process {
public:
    Process() = default;
    static Process start(const std::vector<std::string>& argv, ProcessOptions options);
    Process(Process&& other) noexcept;
    Process& operator=(Process&& other) noexcept;
    ~Process();

    pid_t pid() const { return pid_; }
    bool running();
    // Sends the signal, waits for exit, escalates to SIGKILL after the grace time.
    // Returns the exit status as from waitpid (or -1 when not running).
    int stop(int signal = SIGTERM, std::chrono::milliseconds grace = 10s);
    void kill_now() { stop(SIGKILL, 5s); }
    // Waits for exit without signalling; nullopt on timeout.
    std::optional<int> wait_exit(std::chrono::milliseconds timeout);
    const fs::path& log_path() const { return log_path_; }
    std::string log() const;

private:
    pid_t pid_ = -1;
    int status_ = -1;
    fs::path log_path_;
    std::string name_;
};

// Registers a log file to print if the running test fails.
void register_log(const std::string& label, const fs::path& path);
void unregister_log(const fs::path& path);

// Runs a command to completion; returns exit code and combined output.
struct CommandResult {
    int exit_code;
    std::string output;
};
CommandResult run_command(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                          std::chrono::milliseconds timeout = 120s);

// A private PostgreSQL 15 cluster on 127.0.0.1:<free port>, run as an
// unprivileged user. The superuser is "postgres" with a random password.
class PostgresServer {
public:
    // A hot standby of `primary`: pg_basebackup -R (streaming replication on
    // loopback), started with the given extra settings ("name=value").
    struct StandbyOf {
        const PostgresServer& primary;
        std::vector<std::string> settings;
    };

    PostgresServer();
    explicit PostgresServer(const StandbyOf& standby);
    ~PostgresServer();
    // Standby only: pg_ctl promote, waiting until it accepts writes.
    void promote();
    // Standby only: pause or resume WAL replay (the standby falls behind).
    void pause_replay(bool paused);
    // Standby only: waits until everything `primary` wrote so far is replayed.
    void wait_replayed(const PostgresServer& primary);
    std::uint16_t port() const { return port_; }
    const std::string& superuser_password() const { return password_; }
    std::string url(const std::string& user, const std::string& password, const std::string& database) const;
    std::string superuser_url(const std::string& database = "postgres") const;
    // libpq keywords for the superuser over the unix socket (trust): what query() uses.
    std::string superuser_socket_conninfo(const std::string& database = "postgres") const;
    // Environment for load_settings/provisioning that points at this cluster.
    std::map<std::string, std::string> env(const std::string& database = "wallet") const;
    wallet::Settings settings(wallet::Component component, const std::string& database = "wallet") const;
    // Provisions roles, database and schema (as wallet-db-setup does).
    // Schema migrations up to `schema_version` only, when given (upgrade tests).
    wallet::Settings provision(const std::string& database = "wallet", std::optional<int> schema_version = std::nullopt);
    void stop();
    void start();
    // Runs SQL as the superuser in the database, returns rows as text (tab-separated columns).
    std::vector<std::string> query(const std::string& sql, const std::string& database = "wallet") const;
    // query() on fresh statistics, for reading a whole table through the events
    // view of 0001, which joins every event to its block's stored operations.
    // Right after a load, before autovacuum has analysed the new rows, the
    // planner may expand a block's operations once per event of the block:
    // quadratic, minutes for one block of thousands of operations.
    std::vector<std::string> query_analyzed(const std::string& sql, const std::string& database = "wallet") const;

private:
    // Starts the server on port_; false when another server took the port
    // between free_port() and the bind (this one then exited).
    bool launch();
    // The first start: on a new port each time the chosen one was taken.
    void start_on_a_free_port();

    TempDir dir_;
    std::uint16_t port_ = 0;
    std::string password_;
    std::vector<std::string> settings_;  // extra "-c" settings
    Process process_;
};

inline const char* kWriterPassword = "writer-test-password-0001";
inline const char* kReaderPassword = "reader-test-password-0001";

// A private Redis on 127.0.0.1:<free port> and a unix socket.
class RedisServer {
public:
    RedisServer();
    ~RedisServer();
    std::uint16_t port() const { return port_; }
    fs::path unix_socket() const { return dir_.path() / "redis.sock"; }
    void stop();
    void start();
    std::string command(const std::vector<std::string>& args) const;  // via redis-cli

private:
    TempDir dir_;
    std::uint16_t port_ = 0;
    Process process_;
};

// The project's nginx module, as built in this build tree.
fs::path nginx_module_path();

// The environment of an nginx that loads the module: `extra` plus, in the
// sanitizer build, what Debian's uninstrumented nginx needs to load it.
std::map<std::string, std::string> nginx_env(const std::map<std::string, std::string>& extra);

// nginx from Debian (/usr/sbin/nginx) with the project's module loaded, run in
// the foreground from a temporary prefix. `http_config` is the body of the
// http{} block; "{{PORT}}" in it is replaced by port().
class NginxServer {
public:
    struct Options {
        std::string http_config;
        std::string main_config;      // extra main-level directives (env, thread_pool...)
        int workers = 1;
        bool load_module = true;
        std::map<std::string, std::string> env;
    };
    explicit NginxServer(Options options);
    ~NginxServer();
    std::uint16_t port() const { return port_; }
    std::string url(const std::string& path = "/") const;
    const fs::path& prefix() const { return dir_.path(); }
    fs::path error_log() const { return dir_.path() / "logs" / "error.log"; }
    // The live worker (and cache) processes, children of the master.
    std::vector<pid_t> worker_pids() const;
    // Lines of error.log that mean a bug: alerts, crashes, sanitizer reports.
    std::vector<std::string> fatal_log_lines() const;
    void stop();
    void reload();

    // Writes the config and runs `nginx -t` on it without starting a server.
    static CommandResult test_config(const Options& options);

private:
    static std::string render(const Options& options, std::uint16_t port, const fs::path& prefix);
    Options options_;
    TempDir dir_;
    std::uint16_t port_ = 0;
    Process process_;
};

struct HttpResponse {
    long status = 0;
    std::string body;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string error;                           // transport error, empty on success
};

HttpResponse http_request(const std::string& method, const std::string& url, const std::string& body = "",
                          const std::vector<std::string>& headers = {}, std::chrono::milliseconds timeout = 30s);
inline HttpResponse http_post_json(const std::string& url, const std::string& body,
                                   std::vector<std::string> headers = {}) {
    headers.push_back("Content-Type: application/json");
    return http_request("POST", url, body, headers);
}

}  // namespace harness
