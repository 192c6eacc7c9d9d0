// The node simulator (t/sim, hive-node-sim) as a test fixture: started on a
// free port, stopped with the object; its log is printed when a test fails.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/harness.hpp"
#include "wallet/handles.hpp"

namespace harness {

class NodeSimulator {
public:
    // Starts hive-node-sim with these arguments (plus --port 0 unless they
    // name a port) and waits for its "listening on" line.
    explicit NodeSimulator(std::vector<std::string> args);
    ~NodeSimulator();
    NodeSimulator(const NodeSimulator&) = delete;
    NodeSimulator& operator=(const NodeSimulator&) = delete;

    static fs::path binary();
    // The real-data chain of t/fixtures/hive, head fixed at 5,000,000.
    static std::vector<std::string> real_chain_args();

    std::uint16_t port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

    // POST / with a JSON-RPC body.
    HttpResponse rpc(const std::string& body) const;
    // One JSON-RPC request {"jsonrpc":"2.0","id":1,"method":...,"params":...}
    // (params omitted when empty); the parsed response object.
    wallet::JsonPtr call(const std::string& method, const std::string& params_json) const;
    // POST /sim/control; throws unless the simulator accepts it. Returns the status JSON.
    std::string control(const std::string& json) const;
    // GET /sim/status.
    std::string status() const;
    void stop();

private:
    TempDir dir_;
    Process process_;
    std::uint16_t port_ = 0;
};

// JSON text to a value (any type); throws with the text on a parse error.
wallet::JsonPtr parse_json(const std::string& text);
// Compact text of a value, for failure messages.
std::string json_text(const json_t* value);

}  // namespace harness
