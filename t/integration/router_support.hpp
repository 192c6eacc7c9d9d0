// Shared pieces of the router's integration tests: stand-in backends (the
// real router-test-backend program), routing files pointed at them, the
// nginx configuration of a router location, JSON access, and a small
// blocking WebSocket client built on the module's own frame codec.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <jansson.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/harness.hpp"
#include "router_http.hpp"
#include "router_websocket.hpp"
#include "wallet/handles.hpp"

namespace router_test {

using namespace harness;
using wallet::JsonPtr;

inline fs::path backend_binary() { return binary_dir() / "t" / "backends" / "router-test-backend"; }

// A router-test-backend process answering with `name`, on a TCP port or a unix socket.
class Backend {
public:
    struct Options {
        bool unix_socket = false;
        int slow_ms = 1500;
    };
    explicit Backend(std::string name) : Backend(std::move(name), Options{}) {}
    Backend(std::string name, Options options) : name_(std::move(name)), options_(options), dir_("router-backend") {
        if (!options_.unix_socket) port_ = free_port();
        start();
    }
    ~Backend() { process_.stop(SIGTERM, 5s); }

    void start() {
        port_hold_.reset();
        std::vector<std::string> argv = {backend_binary().string(), "--name", name_, "--slow-ms",
                                         std::to_string(options_.slow_ms)};
        if (options_.unix_socket) {
            argv.insert(argv.end(), {"--unix", socket().string()});
        } else {
            argv.insert(argv.end(), {"--port", std::to_string(port_)});
        }
        ProcessOptions p;
        p.log_path = dir_.path() / "backend.log";
        process_ = Process::start(argv, p);
        bool up = wait_until([&] {
            if (!process_.running()) return true;
            return options_.unix_socket ? fs::exists(socket()) : port_accepts(port_);
        });
        if (!up || !process_.running()) throw std::runtime_error("backend did not start: " + process_.log());
    }
    // The port stays the dead backend's until start(): a server of a test
    // running beside this one would otherwise answer for it.
    void stop() {
        process_.stop(SIGTERM, 5s);
        if (!options_.unix_socket && !port_hold_) port_hold_.emplace(port_);
    }

    const std::string& name() const { return name_; }
    std::uint16_t port() const { return port_; }
    fs::path socket() const { return dir_.path() / "backend.sock"; }
    std::string http_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::string ws_url() const { return "ws://127.0.0.1:" + std::to_string(port_) + "/"; }
    std::string sock_url() const { return "sock://" + socket().string(); }

    // {"connections":K,"requests":N} from GET /stats.
    std::pair<long, long> stats() const {
        std::string url = options_.unix_socket ? "" : http_url() + "/stats";
        auto r = http_request("GET", url);
        JsonPtr j(json_loads(r.body.c_str(), 0, nullptr));
        if (!j) return {-1, -1};
        return {static_cast<long>(json_integer_value(json_object_get(j.get(), "connections"))),
                static_cast<long>(json_integer_value(json_object_get(j.get(), "requests")))};
    }

private:
    std::string name_;
    Options options_;
    TempDir dir_;
    std::uint16_t port_ = 0;
    Process process_;
    std::optional<PortHold> port_hold_;
};

// The routing file at `source` with its targets replaced (same routes, same order).
inline std::string routes_with_targets(const fs::path& source, const std::map<std::string, std::string>& targets,
                                       std::optional<double> timeout = std::nullopt) {
    json_error_t error;
    JsonPtr doc(json_load_file(source.c_str(), 0, &error));
    if (!doc) throw std::runtime_error("cannot read " + source.string() + ": " + error.text);
    json_t* t = json_object_get(doc.get(), "targets");
    for (const auto& [name, url] : targets) json_object_set_new(t, name.c_str(), json_string(url.c_str()));
    if (timeout) json_object_set_new(doc.get(), "timeouts", json_real(*timeout));
    wallet::MallocPtr<char> text(json_dumps(doc.get(), JSON_INDENT(1)));
    return text.get();
}

// The http{} body of a router on {{PORT}} with the routing file `routes`.
inline std::string router_http_config(const fs::path& routes, const std::string& location_extra = "",
                                      const std::string& server_extra = "") {
    return "server {\n  listen 127.0.0.1:{{PORT}};\n" + server_extra + "  location / {\n    jsonrpc_router " +
           routes.string() + ";\n" + location_extra + "  }\n}\n";
}

inline NginxServer::Options nginx_options(std::string http_config, int workers = 1) {
    NginxServer::Options options;
    options.http_config = std::move(http_config);
    options.workers = workers;
    if (const char* cores = std::getenv("ROUTER_TEST_CORE_DIR")) {
        options.main_config = std::string("working_directory ") + cores + ";\nworker_rlimit_core 2g;\n";
    }
    return options;
}

// What an nginx started outside NginxServer (the launcher) needs in a
// sanitizer build: the harness's own nginx environment (Debian's nginx is not
// instrumented, so the runtime and libstdc++ are preloaded). The harness
// knows the build: this driver is compiled without the sanitizers.
inline std::map<std::string, std::string> sanitizer_env() { return harness::nginx_env({}); }

inline std::string redis_directive(const RedisServer& redis) {
    return "    jsonrpc_router_redis 127.0.0.1:" + std::to_string(redis.port()) + ";\n";
}

inline JsonPtr parse_json(const std::string& text) {
    json_error_t error;
    JsonPtr j(json_loadb(text.data(), text.size(), JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL * 0, &error));
    EXPECT_TRUE(j) << "not JSON: " << text;
    return j;
}

// A member by dotted path ("result.backend", "error.code"); nullptr when absent.
inline json_t* at(json_t* j, const std::string& path) {
    std::size_t start = 0;
    while (j != nullptr && start <= path.size()) {
        std::size_t dot = path.find('.', start);
        std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        j = json_is_array(j) ? json_array_get(j, std::stoul(key)) : json_object_get(j, key.c_str());
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return j;
}

inline std::string text_at(json_t* j, const std::string& path) {
    json_t* v = at(j, path);
    if (v == nullptr) return "<absent>";
    if (json_is_string(v)) return json_string_value(v);
    wallet::MallocPtr<char> text(json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT));
    return text.get();
}

// "[a,b,...]": JSON-RPC positional params or a batch. Built by appending:
// GCC 12 at -O3 reports a false -Wrestrict on `"[" + std::string(...)`.
inline std::string json_list(const std::vector<std::string>& items) {
    std::string list = "[";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) list += ',';
        list += items[i];
    }
    list += ']';
    return list;
}

inline std::string rpc(const std::string& method, const std::string& params = "", const std::string& id = "1") {
    std::string body = R"({"jsonrpc":"2.0","method":")" + method + "\"";
    if (!params.empty()) body += R"(,"params":)" + params;
    return body + R"(,"id":)" + id + "}";
}

// A blocking WebSocket client (the test's side of the connection).
class WsClient {
public:
    // `source`: a loopback address to connect from (a client address of its own);
    // `receive_buffer`: SO_RCVBUF in bytes (0: the system's, which grows to megabytes).
    explicit WsClient(std::uint16_t port, const std::string& path = "/", const std::string& source = "",
                      int receive_buffer = 0) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (receive_buffer > 0) setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
        if (!source.empty()) {
            sockaddr_in local{};
            local.sin_family = AF_INET;
            if (::inet_pton(AF_INET, source.c_str(), &local.sin_addr) != 1 ||
                ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
                throw std::runtime_error("bind " + source);
            }
        }
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) throw std::runtime_error("connect");
        int one = 1;
        setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        set_timeout(10s);
        std::string key = router::ws::make_client_key();
        send_raw("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n\r\n");
        router::HttpMessageParser parser(router::HttpMessageParser::Kind::Response, 0);
        while (parser.feed(read_some()) == router::HttpMessageParser::State::Incomplete) {
        }
        status_ = parser.status();
        if (status_ == 101 && parser.header("sec-websocket-accept") != router::ws::accept_key(key)) status_ = -1;
        decoder_.feed(parser.take_leftover());
    }
    ~WsClient() {
        if (fd_ >= 0) ::close(fd_);
    }
    WsClient(const WsClient&) = delete;
    WsClient& operator=(const WsClient&) = delete;

    int handshake_status() const { return status_; }
    void set_timeout(std::chrono::milliseconds t) {
        timeval tv{static_cast<time_t>(t.count() / 1000), static_cast<suseconds_t>((t.count() % 1000) * 1000)};
        setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    }
    void send_text(const std::string& text) { send_raw(router::ws::encode_frame(router::ws::Opcode::Text, text, true)); }
    void send_frame(router::ws::Opcode op, const std::string& payload, bool mask = true) {
        send_raw(router::ws::encode_frame(op, payload, mask));
    }
    void send_raw(const std::string& bytes) {
        std::size_t sent = 0;
        while (sent < bytes.size()) {
            ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) return;
            sent += static_cast<std::size_t>(n);
        }
    }
    // The next event (message, ping, pong, close); nullopt on timeout or EOF.
    std::optional<router::ws::Event> next() {
        router::ws::Event event;
        for (;;) {
            auto status = decoder_.next(event);
            if (status == router::ws::Decoder::Status::Event) return event;
            if (status == router::ws::Decoder::Status::Error) return std::nullopt;
            std::string data = read_some();
            if (data.empty()) return std::nullopt;
            decoder_.feed(data);
        }
    }
    // The next text message, skipping pings.
    std::string next_message() {
        for (;;) {
            auto e = next();
            if (!e) return "";
            if (e->kind == router::ws::Event::Kind::Message) return e->payload;
            if (e->kind == router::ws::Event::Kind::Close) return "";
        }
    }
    std::string call(const std::string& text) {
        send_text(text);
        return next_message();
    }
    // At most `n` bytes of what has arrived, without waiting ("" when nothing has, or at the end).
    std::string read_available(std::size_t n) {
        std::string data(n, '\0');
        ssize_t got = ::recv(fd_, data.data(), n, MSG_DONTWAIT);
        data.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
        return data;
    }
    // Whether the server closed the connection (seen without reading: the TCP state after its FIN or reset).
    bool peer_closed() const {
        tcp_info info{};
        socklen_t size = sizeof(info);
        if (getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &size) != 0) return true;
        return info.tcpi_state == TCP_CLOSE_WAIT || info.tcpi_state == TCP_CLOSE;
    }

private:
    std::string read_some() {
        char buffer[65536];
        ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
        return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
    }
    int fd_ = -1;
    int status_ = 0;
    router::ws::Decoder decoder_{router::ws::Decoder::Role::Client, 64 << 20};
};

}  // namespace router_test
