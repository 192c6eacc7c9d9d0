#include <pwd.h>
#include <sys/file.h>
#include <unistd.h>

#include <curl/curl.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <stdexcept>

#include "harness/harness.hpp"
#include "wallet/db_setup.hpp"
#include "wallet/handles.hpp"
#include "wallet/pg.hpp"

namespace harness {

namespace {

std::string random_token(std::size_t length) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::random_device rd;
    std::mt19937_64 gen(rd());
    std::uniform_int_distribution<std::size_t> pick(0, sizeof(alphabet) - 2);
    std::string out;
    for (std::size_t i = 0; i < length; ++i) out.push_back(alphabet[pick(gen)]);
    return out;
}

fs::path postgres_bin(const std::string& tool) {
    for (const char* dir : {"/usr/lib/postgresql/15/bin", "/usr/local/bin", "/usr/bin"}) {
        fs::path p = fs::path(dir) / tool;
        if (fs::exists(p)) return p;
    }
    throw std::runtime_error("PostgreSQL 15 tool not found: " + tool);
}

void chown_to_nobody(const fs::path& path) {
    if (geteuid() != 0) return;
    passwd* pw = getpwnam("nobody");
    if (pw == nullptr) throw std::runtime_error("no user 'nobody'");
    for (auto& entry : fs::recursive_directory_iterator(path)) {
        if (lchown(entry.path().c_str(), pw->pw_uid, pw->pw_gid) != 0) throw std::runtime_error("chown failed");
    }
    if (lchown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0) throw std::runtime_error("chown failed");
}

// initdb is the slow part of a cluster start: it runs once per build tree and
// user, and every test copies the result.
fs::path postgres_template() {
    fs::path dir = binary_dir() / "t" / ("pg-template-" + std::to_string(geteuid()));
    fs::path ready = dir / "READY";
    fs::create_directories(binary_dir() / "t");
    fs::path lock_path = binary_dir() / "t" / "pg-template.lock";
    int lock = open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    flock(lock, LOCK_EX);
    if (!fs::exists(ready)) {
        std::error_code ec;
        fs::remove_all(dir, ec);
        TempDir work("wallet-initdb");
        fs::path data = work.path() / "data";
        write_file(work.path() / "pwfile", "template-password\n");
        chown_to_nobody(work.path());
        ProcessOptions options;
        options.log_path = work.path() / "initdb.log";
        options.unprivileged = true;
        auto p = Process::start({postgres_bin("initdb").string(), "-D", data.string(), "-U", "postgres",
                                 "--pwfile=" + (work.path() / "pwfile").string(), "--auth-local=trust",
                                 "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync",
                                 "--no-instructions"},
                                options);
        auto status = p.wait_exit(120s);
        if (!status || *status != 0) {
            std::string log = p.log();
            flock(lock, LOCK_UN);
            close(lock);
            throw std::runtime_error("initdb failed:\n" + log);
        }
        fs::create_directories(dir);
        fs::copy(data, dir / "data", fs::copy_options::recursive);
        write_file(ready, "ok\n");
    }
    flock(lock, LOCK_UN);
    close(lock);
    return dir / "data";
}

}  // namespace

// ---- PostgreSQL --------------------------------------------------------------

PostgresServer::PostgresServer() : dir_("wallet-pg") {
    fs::copy(postgres_template(), dir_.path() / "data", fs::copy_options::recursive);
    fs::create_directories(dir_.path() / "run");
    chown_to_nobody(dir_.path());
    fs::permissions(dir_.path() / "data", fs::perms::owner_all);
    password_ = "template-password";
    start_on_a_free_port();
    // Each cluster gets its own superuser password.
    std::string fresh = "pg-" + random_token(24);
    auto conn = wallet::pg::connect(superuser_url());
    if (!conn) throw std::runtime_error(conn.error());
    auto r = wallet::pg::exec(conn->get(), "ALTER ROLE postgres PASSWORD " + wallet::pg::quote_literal(conn->get(), fresh));
    if (!r) throw std::runtime_error(r.error());
    password_ = fresh;
}

PostgresServer::PostgresServer(const StandbyOf& standby) : dir_("wallet-pg-standby") {
    fs::create_directories(dir_.path() / "run");
    chown_to_nobody(dir_.path());
    password_ = standby.primary.password_;
    settings_ = standby.settings;
    ProcessOptions options;
    options.log_path = dir_.path() / "basebackup.log";
    options.unprivileged = true;
    // The password reaches primary_conninfo (-R) through the connection.
    options.env["PGPASSWORD"] = password_;
    auto backup = Process::start({postgres_bin("pg_basebackup").string(), "-h", "127.0.0.1", "-p",
                                  std::to_string(standby.primary.port_), "-U", "postgres", "-D",
                                  (dir_.path() / "data").string(), "-R", "-X", "stream", "-c", "fast", "--no-sync"},
                                 options);
    auto status = backup.wait_exit(120s);
    if (!status || *status != 0) throw std::runtime_error("pg_basebackup failed:\n" + backup.log());
    start_on_a_free_port();
}

PostgresServer::~PostgresServer() { stop(); }

void PostgresServer::promote() {
    ProcessOptions options;
    options.log_path = dir_.path() / "promote.log";
    options.unprivileged = true;
    auto p = Process::start({postgres_bin("pg_ctl").string(), "promote", "-w", "-t", "60", "-D",
                             (dir_.path() / "data").string()},
                            options);
    auto status = p.wait_exit(90s);
    if (!status || *status != 0) throw std::runtime_error("pg_ctl promote failed:\n" + p.log());
    if (!wait_until([&] { return query("SELECT pg_is_in_recovery()", "postgres").at(0) == "f"; }, 60s)) {
        throw std::runtime_error("the promoted standby is still in recovery");
    }
}

void PostgresServer::pause_replay(bool paused) {
    query(paused ? "SELECT pg_wal_replay_pause()" : "SELECT pg_wal_replay_resume()", "postgres");
}

void PostgresServer::wait_replayed(const PostgresServer& primary) {
    // The insert position: with synchronous_commit=off a commit record may
    // still be in WAL buffers, behind what pg_current_wal_lsn() reports.
    const std::string written = primary.query("SELECT pg_current_wal_insert_lsn()", "postgres").at(0);
    const bool caught_up = wait_until(
        [&] { return query("SELECT pg_last_wal_replay_lsn() >= '" + written + "'::pg_lsn", "postgres").at(0) == "t"; },
        60s);
    if (!caught_up) throw std::runtime_error("the standby did not replay " + written);
}

void PostgresServer::start() {
    if (!launch()) throw std::runtime_error("PostgreSQL did not start: port " + std::to_string(port_) + " taken:\n" + process_.log());
}

void PostgresServer::start_on_a_free_port() {
    for (int attempt = 0;; ++attempt) {
        port_ = free_port();
        if (launch()) return;
        if (attempt == 4) throw std::runtime_error("PostgreSQL did not start: every port tried was taken:\n" + process_.log());
    }
}

bool PostgresServer::launch() {
    ProcessOptions options;
    options.log_path = dir_.path() / "postgres.log";
    options.unprivileged = true;
    std::vector<std::string> argv{postgres_bin("postgres").string(), "-D", (dir_.path() / "data").string(), "-p",
                                  std::to_string(port_), "-k", (dir_.path() / "run").string(), "-c",
                                  "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c",
                                  "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=64MB", "-c",
                                  "log_min_messages=warning"};
    for (const auto& setting : settings_) {
        argv.push_back("-c");
        argv.push_back(setting);
    }
    process_ = Process::start(argv, options);
    // Ready when its own unix socket answers: over TCP, a server of another
    // test that took the same port (both chose it before either bound it)
    // would pass for this one, which exits for want of a TCP socket.
    bool up = wait_until(
        [&] {
            if (!process_.running()) return true;
            wallet::PgConnPtr c(PQconnectdb(superuser_socket_conninfo("postgres").c_str()));
            return PQstatus(c.get()) == CONNECTION_OK;
        },
        60s, 25ms);
    if (up && process_.running()) return true;
    const std::string log = process_.log();
    if (log.find("could not create any TCP/IP sockets") != std::string::npos) return false;
    throw std::runtime_error("PostgreSQL did not start:\n" + log);
}

void PostgresServer::stop() {
    // SIGINT = fast shutdown: active transactions roll back, data stays consistent.
    process_.stop(SIGINT, 20s);
}

std::string PostgresServer::url(const std::string& user, const std::string& password, const std::string& database) const {
    return wallet::make_postgres_url(user, password, "127.0.0.1", port_, database);
}

std::string PostgresServer::superuser_url(const std::string& database) const {
    return url("postgres", password_, database);
}

std::map<std::string, std::string> PostgresServer::env(const std::string& database) const {
    return {{"DB_USER", "postgres"},
            {"DB_PASSWORD", password_},
            {"DB_NAME", database},
            {"DB_BIND_HOST", "127.0.0.1"},
            {"DB_BIND_PORT", std::to_string(port_)},
            {"WALLET_WRITER_PASSWORD", kWriterPassword},
            {"WALLET_API_READER_PASSWORD", kReaderPassword}};
}

wallet::Settings PostgresServer::settings(wallet::Component component, const std::string& database) const {
    return wallet::load_settings(wallet::map_env(env(database)), component);
}

wallet::Settings PostgresServer::provision(const std::string& database, std::optional<int> schema_version) {
    auto s = settings(wallet::Component::DatabaseSetup, database);
    auto version = wallet::provision_database(s, schema_version);
    if (!version) throw std::runtime_error("provisioning failed: " + version.error());
    return s;
}

// The tests' own statements log in over the cluster's unix socket (trust, local to
// the test): a SCRAM login over TCP costs the client about 5 ms of CPU
// (PBKDF2, 4,096 rounds), and polls run a statement every 20 ms, so on the CI
// machine's two busy cores that was CPU taken from the servers under test. The
// product's own connections (indexer, module, backfill) still log in over TCP.
std::string PostgresServer::superuser_socket_conninfo(const std::string& database) const {
    const auto quoted = [](const std::string& value) {
        std::string out = "'";
        for (char c : value) {
            if (c == '\\' || c == '\'') out += '\\';
            out += c;
        }
        return out + "'";
    };
    return "host=" + quoted((dir_.path() / "run").string()) + " port=" + std::to_string(port_) +
           " user=postgres dbname=" + quoted(database);
}

std::vector<std::string> PostgresServer::query(const std::string& sql, const std::string& database) const {
    auto conn = wallet::pg::connect(superuser_socket_conninfo(database));
    if (!conn) throw std::runtime_error(conn.error());
    auto r = wallet::pg::exec(conn->get(), sql);
    if (!r) throw std::runtime_error(r.error() + "\nin: " + sql);
    std::vector<std::string> rows;
    PGresult* res = r->get();
    for (int i = 0; i < PQntuples(res); ++i) {
        std::string row;
        for (int j = 0; j < PQnfields(res); ++j) {
            if (j > 0) row += '\t';
            row += PQgetisnull(res, i, j) ? "NULL" : PQgetvalue(res, i, j);
        }
        rows.push_back(row);
    }
    return rows;
}

std::vector<std::string> PostgresServer::query_analyzed(const std::string& sql, const std::string& database) const {
    query("ANALYZE", database);
    return query(sql, database);
}

// ---- Redis -------------------------------------------------------------------

RedisServer::RedisServer() : dir_("wallet-redis") {
    // Another process may bind the port first: then try another one.
    for (int attempt = 1;; ++attempt) {
        port_ = free_port();
        try {
            start();
            return;
        } catch (const std::runtime_error&) {
            if (attempt == 3) throw;
        }
    }
}

RedisServer::~RedisServer() { stop(); }

void RedisServer::start() {
    ProcessOptions options;
    options.log_path = dir_.path() / "redis.log";
    process_ = Process::start({"/usr/bin/redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
                               "--unixsocket", unix_socket().string(), "--unixsocketperm", "777", "--save", "",
                               "--appendonly", "no", "--dir", dir_.path().string(), "--daemonize", "no"},
                              options);
    if (!wait_until([&] { return port_accepts(port_) || !process_.running(); }, 20s) || !process_.running()) {
        throw std::runtime_error("Redis did not start:\n" + process_.log());
    }
}

void RedisServer::stop() { process_.stop(SIGTERM, 10s); }

std::string RedisServer::command(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"/usr/bin/redis-cli", "-p", std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv).output;
}

// ---- nginx -------------------------------------------------------------------

fs::path nginx_module_path() { return binary_dir() / "ngx_module" / "ngx_http_wallet_module.so"; }

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size()) {
        text.replace(pos, from.size(), to);
    }
    return text;
}

bool sanitized_build() {
#ifdef WALLET_SANITIZE
    return true;
#else
    return false;
#endif
}

std::map<std::string, std::string> nginx_env(const std::map<std::string, std::string>& extra) {
    std::map<std::string, std::string> env = extra;
#ifdef WALLET_SANITIZE
    // Debian's nginx is not instrumented: the runtime must be loaded first, and
    // libstdc++ with it, or the first C++ throw in the module aborts.
    env["LD_PRELOAD"] = WALLET_ASAN_RUNTIME " /usr/lib/x86_64-linux-gnu/libstdc++.so.6";
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1";
#endif
    return env;
}

std::string NginxServer::render(const Options& options, std::uint16_t port, const fs::path& prefix) {
    std::ostringstream conf;
    conf << "daemon off;\nmaster_process on;\nworker_processes " << options.workers << ";\n"
         << "error_log " << (prefix / "logs" / "error.log").string() << " info;\n"
         << "pid " << (prefix / "logs" / "nginx.pid").string() << ";\n";
    if (geteuid() == 0) conf << "user root root;\n";
    if (options.load_module) conf << "load_module " << nginx_module_path().string() << ";\n";
    for (const auto& [k, v] : options.env) conf << "env " << k << ";\n";
    conf << replace_all(options.main_config, "{{PORT}}", std::to_string(port)) << "\n";
    conf << "events { worker_connections 4096; }\n"
         << "http {\n"
         << "    access_log " << (prefix / "logs" / "access.log").string() << ";\n"
         << "    client_body_temp_path " << (prefix / "tmp" / "body").string() << ";\n"
         << "    proxy_temp_path " << (prefix / "tmp" / "proxy").string() << ";\n"
         << "    fastcgi_temp_path " << (prefix / "tmp" / "fastcgi").string() << ";\n"
         << "    uwsgi_temp_path " << (prefix / "tmp" / "uwsgi").string() << ";\n"
         << "    scgi_temp_path " << (prefix / "tmp" / "scgi").string() << ";\n"
         << replace_all(replace_all(options.http_config, "{{PORT}}", std::to_string(port)), "{{PREFIX}}",
                        prefix.string())
         << "\n}\n";
    return conf.str();
}

CommandResult NginxServer::test_config(const Options& options) {
    TempDir dir("wallet-nginx-t");
    fs::create_directories(dir.path() / "logs");
    fs::create_directories(dir.path() / "tmp");
    write_file(dir.path() / "conf" / "nginx.conf", render(options, free_port(), dir.path()));
    return run_command({"/usr/sbin/nginx", "-p", dir.path().string(), "-c", (dir.path() / "conf" / "nginx.conf").string(),
                        "-t"},
                       nginx_env(options.env));
}

NginxServer::NginxServer(Options options) : options_(std::move(options)), dir_("wallet-nginx") {
    fs::create_directories(dir_.path() / "logs");
    fs::create_directories(dir_.path() / "tmp");
    port_ = free_port();
    write_file(dir_.path() / "conf" / "nginx.conf", render(options_, port_, dir_.path()));
    ProcessOptions p;
    p.log_path = dir_.path() / "logs" / "stderr.log";
    p.env = nginx_env(options_.env);
    register_log("nginx error.log", error_log());
    process_ = Process::start({"/usr/sbin/nginx", "-p", dir_.path().string(), "-c",
                               (dir_.path() / "conf" / "nginx.conf").string()},
                              p);
    if (!wait_until([&] { return port_accepts(port_) || !process_.running(); }, 20s) || !process_.running()) {
        throw std::runtime_error("nginx did not start:\n" + process_.log() + read_file(error_log()));
    }
}

NginxServer::~NginxServer() {
    stop();
    unregister_log(error_log());
}

std::string NginxServer::url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

void NginxServer::stop() { process_.stop(SIGQUIT, 10s); }

void NginxServer::reload() {
    if (process_.running()) ::kill(process_.pid(), SIGHUP);
}

std::vector<pid_t> NginxServer::worker_pids() const {
    std::vector<pid_t> out;
    if (process_.pid() <= 0) return out;
    const std::string master = std::to_string(process_.pid());
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        // "pid (comm) state ppid ...": comm may hold spaces, so read after the last ')'.
        const std::string text = read_file(entry.path() / "stat");
        const auto close = text.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream fields(text.substr(close + 1));
        std::string state;
        std::string ppid;
        fields >> state >> ppid;
        if (ppid == master && state != "Z") out.push_back(static_cast<pid_t>(std::stol(name)));
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::string> NginxServer::fatal_log_lines() const {
    std::vector<std::string> out;
    std::istringstream in(read_file(error_log()));
    for (std::string line; std::getline(in, line);) {
        if (line.find("[alert]") != std::string::npos || line.find("[emerg]") != std::string::npos ||
            line.find("[crit]") != std::string::npos || line.find("exited on signal") != std::string::npos ||
            line.find("AddressSanitizer") != std::string::npos || line.find("runtime error:") != std::string::npos ||
            (line.find("exited with code") != std::string::npos && line.find("exited with code 0") == std::string::npos)) {
            out.push_back(line);
        }
    }
    return out;
}

// ---- HTTP client -------------------------------------------------------------

namespace {

std::size_t collect_body(char* data, std::size_t size, std::size_t count, void* user) {
    static_cast<std::string*>(user)->append(data, size * count);
    return size * count;
}

std::size_t collect_header(char* data, std::size_t size, std::size_t count, void* user) {
    std::string line(data, size * count);
    auto colon = line.find(':');
    if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        std::string value = line.substr(colon + 1);
        auto b = value.find_first_not_of(" \t");
        auto e = value.find_last_not_of(" \t\r\n");
        (*static_cast<std::map<std::string, std::string>*>(user))[name] =
            b == std::string::npos ? "" : value.substr(b, e - b + 1);
    }
    return size * count;
}

}  // namespace

HttpResponse http_request(const std::string& method, const std::string& url, const std::string& body,
                          const std::vector<std::string>& headers, std::chrono::milliseconds timeout) {
    HttpResponse response;
    wallet::CurlPtr curl(curl_easy_init());
    wallet::CurlSlistPtr header_list;
    for (const auto& h : headers) header_list.reset(curl_slist_append(header_list.release(), h.c_str()));
    curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    if (!body.empty() || method == "POST" || method == "PUT") {
        curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.data());
        curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    }
    curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, header_list.get());
    curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, collect_body);
    curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, collect_header);
    curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &response.headers);
    CURLcode rc = curl_easy_perform(curl.get());
    if (rc != CURLE_OK) {
        response.error = curl_easy_strerror(rc);
        return response;
    }
    curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &response.status);
    return response;
}

}  // namespace harness
