#include "harness/node_sim.hpp"

#include <algorithm>
#include <stdexcept>

namespace harness {

fs::path NodeSimulator::binary() { return binary_dir() / "t" / "sim" / "hive-node-sim"; }

std::vector<std::string> NodeSimulator::real_chain_args() {
    return {"--fixtures", fixtures_dir().string(), "--block-interval-ms", "0"};
}

NodeSimulator::NodeSimulator(std::vector<std::string> args) : dir_("hive-node-sim") {
    std::vector<std::string> argv = {binary().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    // A free port, unless the test names one (a node restarted on its old port).
    if (std::find(args.begin(), args.end(), "--port") == args.end()) argv.insert(argv.end(), {"--port", "0"});
    ProcessOptions options;
    options.log_path = dir_.path() / "hive-node-sim.log";
    process_ = Process::start(argv, options);
    static constexpr std::string_view kListening = "listening on http://127.0.0.1:";
    std::string log;
    bool up = wait_until(
        [&] {
            log = process_.log();
            return log.find(kListening) != std::string::npos || !process_.running();
        },
        60s);
    std::size_t at = log.find(kListening);
    if (!up || at == std::string::npos) throw std::runtime_error("hive-node-sim did not start:\n" + log);
    port_ = static_cast<std::uint16_t>(std::stoul(log.substr(at + kListening.size())));
}

NodeSimulator::~NodeSimulator() { stop(); }

void NodeSimulator::stop() { process_.stop(SIGTERM, 10s); }

HttpResponse NodeSimulator::rpc(const std::string& body) const { return http_post_json(url(), body); }

std::string NodeSimulator::control(const std::string& json) const {
    HttpResponse response = http_post_json(url() + "sim/control", json);
    if (response.status != 200) throw std::runtime_error("control " + json + " refused: " + response.body);
    return response.body;
}

wallet::JsonPtr NodeSimulator::call(const std::string& method, const std::string& params_json) const {
    std::string body = R"({"jsonrpc":"2.0","id":1,"method":")" + method + "\"";
    if (!params_json.empty()) body += ",\"params\":" + params_json;
    body += "}";
    HttpResponse response = rpc(body);
    if (response.status != 200) throw std::runtime_error(method + ": HTTP " + std::to_string(response.status));
    return parse_json(response.body);
}

wallet::JsonPtr parse_json(const std::string& text) {
    json_error_t error;
    wallet::JsonPtr value = wallet::json_own(json_loadb(text.data(), text.size(), JSON_DECODE_ANY, &error));
    if (!value) throw std::runtime_error(std::string("not JSON (") + error.text + "): " + text.substr(0, 300));
    return value;
}

std::string json_text(const json_t* value) {
    wallet::MallocPtr<char> text(json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY));
    return text ? std::string(text.get()) : std::string("(null)");
}

std::string NodeSimulator::status() const { return http_request("GET", url() + "sim/status").body; }

}  // namespace harness
