#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "harness/harness.hpp"

extern char** environ;

namespace harness {

fs::path source_dir() { return WALLET_SOURCE_DIR; }
fs::path binary_dir() { return WALLET_BINARY_DIR; }
fs::path fixtures_dir() { return WALLET_HIVE_FIXTURES_DIR; }
fs::path proxy_fixtures_dir() { return WALLET_PROXY_FIXTURES_DIR; }

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const fs::path& path, const std::string& contents) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << contents;
}

TempDir::TempDir(const std::string& prefix) {
    fs::path base = fs::temp_directory_path();
    std::string pattern = (base / (prefix + "-XXXXXX")).string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = buffer.data();
    // Traversable by the unprivileged user that runs PostgreSQL.
    fs::permissions(path_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec |
                               fs::perms::group_read | fs::perms::others_read);
}

TempDir::~TempDir() {
    const char* keep = std::getenv("WALLET_TEST_KEEP");
    if (keep != nullptr && std::string(keep) == "1") {
        std::cerr << "kept " << path_ << "\n";
        return;
    }
    std::error_code ec;
    fs::remove_all(path_, ec);
}

// A port below the kernel's ephemeral range (32768 and up on Linux): there the
// outgoing connections of the tests themselves (libpq, curl, redis-cli) can
// never take it between this check and the server's bind. Random, so that
// test processes running side by side rarely try the same one.
std::uint16_t free_port() {
    constexpr int kFirst = 20000;
    constexpr int kLast = 32000;
    static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
    std::uniform_int_distribution<int> pick(kFirst, kLast);
    for (int attempt = 0; attempt < 200; ++attempt) {
        const auto port = static_cast<std::uint16_t>(pick(rng));
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) break;
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(port);
        const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        close(fd);
        if (bound) return port;
    }
    throw std::runtime_error("cannot find a free port");
}

// SO_REUSEADDR binds beside the TIME_WAIT connections the stopped server
// leaves; free_port()'s test bind (without it) still fails on the port.
PortHold::PortHold(std::uint16_t port) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const int error = errno;
        close(fd_);
        throw std::runtime_error("cannot hold port " + std::to_string(port) + ": " + std::strerror(error));
    }
}

PortHold::~PortHold() { close(fd_); }

bool port_accepts(std::uint16_t port, const std::string& host) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    addr.sin_port = htons(port);
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    return ok;
}

bool wait_until(const std::function<bool()>& predicate, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
        if (predicate()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(interval);
    }
}

// ---- logs printed on failure -------------------------------------------------

namespace {

std::mutex g_logs_mutex;
std::vector<std::pair<std::string, fs::path>>& live_logs() {
    static std::vector<std::pair<std::string, fs::path>> logs;
    return logs;
}

std::string tail_of(const fs::path& path, std::size_t max_lines) {
    std::string text = read_file(path);
    std::size_t pos = text.size();
    std::size_t lines = 0;
    while (pos > 0 && lines <= max_lines) {
        pos = text.rfind('\n', pos - 1);
        if (pos == std::string::npos) {
            pos = 0;
            break;
        }
        ++lines;
    }
    return text.substr(pos);
}

class PrintLogsOnFailure : public ::testing::EmptyTestEventListener {
    void OnTestPartResult(const ::testing::TestPartResult& result) override {
        if (!result.failed() || printed_) return;
        printed_ = true;
        std::lock_guard lock(g_logs_mutex);
        for (const auto& [label, path] : live_logs()) {
            std::cerr << "\n----- " << label << " (" << path.string() << "), last lines -----\n"
                      << tail_of(path, 80) << "\n----- end of " << label << " -----\n";
        }
    }
    void OnTestStart(const ::testing::TestInfo&) override { printed_ = false; }
    bool printed_ = false;
};

// Installed once per test binary, before main() runs the tests.
const bool g_listener_installed = [] {
    ::testing::UnitTest::GetInstance()->listeners().Append(new PrintLogsOnFailure);  // gtest owns listeners
    return true;
}();

}  // namespace

void register_log(const std::string& label, const fs::path& path) {
    std::lock_guard lock(g_logs_mutex);
    live_logs().emplace_back(label, path);
}

void unregister_log(const fs::path& path) {
    std::lock_guard lock(g_logs_mutex);
    auto& logs = live_logs();
    std::erase_if(logs, [&](const auto& entry) { return entry.second == path; });
}

// ---- processes ---------------------------------------------------------------

namespace {

std::vector<std::string> merged_environment(const ProcessOptions& options) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string entry = *e;
        auto eq = entry.find('=');
        if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    for (const auto& name : options.unset_env) env.erase(name);
    for (const auto& [k, v] : options.env) env[k] = v;
    std::vector<std::string> out;
    for (const auto& [k, v] : env) out.push_back(k + "=" + v);
    return out;
}

}  // namespace

Process Process::start(const std::vector<std::string>& argv, ProcessOptions options) {
    if (argv.empty()) throw std::runtime_error("empty argv");
    if (options.log_path.empty()) throw std::runtime_error("a process needs a log path");
    fs::create_directories(options.log_path.parent_path());
    auto env = merged_environment(options);
    std::vector<char*> env_ptrs;
    for (auto& e : env) env_ptrs.push_back(e.data());
    env_ptrs.push_back(nullptr);
    std::vector<std::string> args = argv;
    std::vector<char*> arg_ptrs;
    for (auto& a : args) arg_ptrs.push_back(a.data());
    arg_ptrs.push_back(nullptr);

    uid_t uid = 0;
    gid_t gid = 0;
    const bool drop = options.unprivileged && geteuid() == 0;
    if (drop) {
        passwd* pw = getpwnam("nobody");
        if (pw == nullptr) throw std::runtime_error("no user 'nobody' to run unprivileged processes");
        uid = pw->pw_uid;
        gid = pw->pw_gid;
    }

    int log_fd = open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) throw std::runtime_error("cannot open log " + options.log_path.string());
    if (drop && fchown(log_fd, uid, gid) != 0) {
        close(log_fd);
        throw std::runtime_error("cannot chown log");
    }

    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        setpgid(0, 0);
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, STDIN_FILENO);
        if (options.cwd && chdir(options.cwd->c_str()) != 0) _exit(126);
        if (drop && (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) _exit(126);
        execve(arg_ptrs[0], arg_ptrs.data(), env_ptrs.data());
        execvpe(arg_ptrs[0], arg_ptrs.data(), env_ptrs.data());
        std::fprintf(stderr, "exec %s failed: %s\n", arg_ptrs[0], std::strerror(errno));
        _exit(127);
    }
    close(log_fd);
    Process p;
    p.pid_ = pid;
    p.log_path_ = options.log_path;
    p.name_ = fs::path(argv[0]).filename().string();
    register_log(p.name_, p.log_path_);
    return p;
}

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), status_(other.status_), log_path_(std::move(other.log_path_)),
      name_(std::move(other.name_)) {}

Process& Process::operator=(Process&& other) noexcept {
    if (this != &other) {
        stop();
        pid_ = std::exchange(other.pid_, -1);
        status_ = other.status_;
        log_path_ = std::move(other.log_path_);
        name_ = std::move(other.name_);
    }
    return *this;
}

Process::~Process() {
    stop();
    if (!log_path_.empty()) unregister_log(log_path_);
}

bool Process::running() {
    if (pid_ <= 0) return false;
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
        status_ = status;
        pid_ = -1;
        return false;
    }
    return true;
}

std::optional<int> Process::wait_exit(std::chrono::milliseconds timeout) {
    if (!wait_until([&] { return !running(); }, timeout, 5ms)) return std::nullopt;
    return status_;
}

int Process::stop(int signal, std::chrono::milliseconds grace) {
    if (!running()) return status_;
    ::kill(pid_, signal);
    if (auto status = wait_exit(grace)) return *status;
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    status_ = status;
    pid_ = -1;
    return status_;
}

std::string Process::log() const { return read_file(log_path_); }

CommandResult run_command(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          std::chrono::milliseconds timeout) {
    TempDir dir("wallet-cmd");
    ProcessOptions options;
    options.env = env;
    options.log_path = dir.path() / "output.log";
    auto p = Process::start(argv, options);
    auto status = p.wait_exit(timeout);
    std::string output = p.log();
    unregister_log(options.log_path);
    if (!status) {
        p.stop(SIGKILL);
        return {-1, output + "\n(timed out)"};
    }
    int code = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
    return {code, output};
}

}  // namespace harness
