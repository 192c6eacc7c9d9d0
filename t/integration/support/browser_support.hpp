// The browser tests' shared parts (label `browser`): Debian's Chromium driven
// by playwright-core (t/browser/driver.js and a page module), and the demo's
// one nginx exactly as scripts/start writes it (scripts/render-demo-nginx).
// Each test saves a screenshot in <build>/t/browser/screenshots/<suite>/.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/harness.hpp"
#include "api_support.hpp"
#include "npm_packages.hpp"

namespace browser_test {

using namespace harness;
using wallet::JsonPtr;

inline std::string chromium_path() {
    const char* path = std::getenv("WALLET_CHROMIUM");
    return path != nullptr ? path : "/usr/bin/chromium";
}

inline fs::path browser_dir() { return binary_dir() / "t" / "browser"; }
// Where driver.js and `page_module` are installed with their packages: one
// directory per page, so that the browser tests run at once without sharing files.
inline fs::path driver_dir(const std::string& page_module) {
    return browser_dir() / fs::path(page_module).stem();
}

// Empty when Chromium, Node.js and the pinned packages are there (installed
// now if needed) for driver.js with `page_module`; otherwise why not.
inline std::string unavailable(const std::string& page_module) {
    if (!fs::exists(chromium_path())) {
        return chromium_path() + " is not installed (Debian's chromium: scripts/install-deps installs it)";
    }
    return npm_test::install_packages("browser", {"driver.js", page_module}, driver_dir(page_module));
}

// The screenshot of the running test, `suffix` added to its name:
// <build>/t/browser/screenshots/<suite>/<test><suffix>.png.
inline fs::path screenshot_path(const std::string& suffix = "") {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path screenshots = browser_dir() / "screenshots" / test->test_suite_name();
    fs::create_directories(screenshots);
    return screenshots / (std::string(test->name()) + suffix + ".png");
}

// driver.js with one page module: Chromium started once, a script per run().
class BrowserDriver {
public:
    BrowserDriver(const std::string& page_module, const fs::path& dir) {
        const fs::path port_file = dir / "driver.port";
        ProcessOptions options;
        options.log_path = dir / "driver.log";
        register_log("browser driver", options.log_path);
        process_ = Process::start({"node", (driver_dir(page_module) / "driver.js").string(), page_module, chromium_path(),
                                   port_file.string()},
                                  options);
        if (!wait_until([&] { return fs::exists(port_file) || !process_.running(); }, 60s) || !process_.running()) {
            throw std::runtime_error("the browser driver did not start:\n" + process_.log());
        }
        // The file is written whole before it is seen with content.
        wait_until([&] { return !read_file(port_file).empty(); }, 5s);
        url_ = "http://127.0.0.1:" + read_file(port_file) + "/run";
    }
    ~BrowserDriver() { process_.stop(SIGTERM, 10s); }
    BrowserDriver(const BrowserDriver&) = delete;
    BrowserDriver& operator=(const BrowserDriver&) = delete;

    // Runs `script` (driver.js's form, "screenshot" added); its answer, or
    // an empty {"snapshots": [], "problems": []} after a failed expectation.
    JsonPtr run(JsonPtr script, const fs::path& screenshot) {
        json_object_set_new(script.get(), "screenshot", json_string(screenshot.c_str()));
        auto response = http_request("POST", url_, api_test::dump(script.get()), {"Content-Type: application/json"}, 120s);
        EXPECT_EQ(response.status, 200) << response.error << response.body << process_.log();
        std::cout << "screenshot: " << screenshot.string() << std::endl;
        JsonPtr answer = response.status == 200 ? api_test::parse_json(response.body) : JsonPtr();
        return answer ? std::move(answer) : JsonPtr(json_pack("{s:[], s:[]}", "snapshots", "problems"));
    }

private:
    Process process_;
    std::string url_;
};

// The demo's nginx (the router with the wallet page, the API with the status
// page) on free ports, from scripts/render-demo-nginx; `chain_rpc_url` may
// list a pool of nodes, comma-separated.
class DemoNginx {
public:
    DemoNginx(const fs::path& dir, const std::string& chain_rpc_url, std::uint16_t redis_port,
              std::map<std::string, std::string> pg_env)
        : dir_(dir / "nginx"), router_port_(free_port()), api_port_(free_port()) {
        auto rendered = run_command({(source_dir() / "scripts" / "render-demo-nginx").string(), dir_.string()},
                                    {{"CHAIN_RPC_URL", chain_rpc_url},
                                     {"REDIS_ADDR", "127.0.0.1:" + std::to_string(redis_port)},
                                     {"HOST", "127.0.0.1"},
                                     {"PORT", std::to_string(router_port_)},
                                     {"API_BIND_HOST", "127.0.0.1"},
                                     {"API_BIND_PORT", std::to_string(api_port_)},
                                     {"WALLET_BUILD_DIR", binary_dir().string()}});
        if (rendered.exit_code != 0) throw std::runtime_error("render-demo-nginx: " + rendered.output);
        pg_env.erase("DB_PASSWORD");  // the API connects as the reader role
        ProcessOptions options;
        options.env = nginx_env(pg_env);
        options.log_path = dir_ / "logs" / "stderr.log";
        register_log("demo nginx error.log", dir_ / "logs" / "error.log");
        process_ = Process::start({"/usr/sbin/nginx", "-p", dir_.string(), "-c", (dir_ / "nginx.conf").string()}, options);
        if (!wait_until([&] { return (port_accepts(router_port_) && port_accepts(api_port_)) || !process_.running(); }) ||
            !process_.running()) {
            throw std::runtime_error("the demo's nginx did not start:\n" + process_.log() +
                                     read_file(dir_ / "logs" / "error.log"));
        }
    }
    ~DemoNginx() {
        process_.stop(SIGQUIT, 10s);
        unregister_log(dir_ / "logs" / "error.log");
    }
    DemoNginx(const DemoNginx&) = delete;
    DemoNginx& operator=(const DemoNginx&) = delete;

    std::string router_url() const { return "http://127.0.0.1:" + std::to_string(router_port_) + "/"; }
    std::string api_url() const { return "http://127.0.0.1:" + std::to_string(api_port_) + "/"; }

private:
    fs::path dir_;
    std::uint16_t router_port_, api_port_;
    Process process_;
};

// A script for driver.js: {"url" (unless empty), "phone", "steps"}.
inline JsonPtr script(const std::string& url, const std::string& steps, bool phone = false) {
    JsonPtr out(json_pack("{s:b}", "phone", phone));
    if (!url.empty()) json_object_set_new(out.get(), "url", json_string(url.c_str()));
    json_object_set_new(out.get(), "steps", json_loads(steps.c_str(), 0, nullptr));
    return out;
}

// The one snapshot per step, and no script error or failed request on the page.
inline std::vector<json_t*> snapshots(const JsonPtr& answer, std::size_t steps) {
    std::vector<std::string> problems;
    json_t* list = json_object_get(answer.get(), "problems");
    for (std::size_t i = 0; i < json_array_size(list); ++i) problems.emplace_back(json_string_value(json_array_get(list, i)));
    EXPECT_EQ(problems, std::vector<std::string>{});
    json_t* shown = json_object_get(answer.get(), "snapshots");
    EXPECT_EQ(json_array_size(shown), steps) << api_test::dump(answer.get());
    std::vector<json_t*> out;
    for (std::size_t i = 0; i < steps; ++i) out.push_back(json_array_size(shown) > i ? json_array_get(shown, i) : json_object());
    return out;
}

// The tests of one program share one `Stack` (started once, with the
// browser: Stack::kPageModule names its driver module). Without Chromium,
// Node.js or the pinned packages each test is skipped saying why (under
// CI=true it fails); a stack that did not start fails each test.
template <typename Stack>
class BrowserSuite : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        unavailable_ = unavailable(Stack::kPageModule);
        if (!unavailable_.empty()) return;
        try {
            stack_ = std::make_unique<Stack>();
        } catch (const std::exception& error) {
            failed_ = error.what();
        }
    }
    static void TearDownTestSuite() { stack_.reset(); }

    void SetUp() override {
        if (!unavailable_.empty()) {
            if (npm_test::missing_tools_fail()) FAIL() << unavailable_ << " (CI=true: a skip would hide it)";
            GTEST_SKIP() << unavailable_;
        }
        ASSERT_TRUE(stack_) << "the stack did not start: " << failed_;
    }

    Stack& stack() { return *stack_; }

    static inline std::unique_ptr<Stack> stack_;
    static inline std::string unavailable_, failed_;
};

}  // namespace browser_test
