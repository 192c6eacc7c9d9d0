// npm packages of the tests that drive the product with real clients
// (t/clients: Hive client libraries; t/browser: playwright-core), installed
// into the build tree from their pinned lock files.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "harness/harness.hpp"

namespace npm_test {

using namespace harness;

// Copies package.json, package-lock.json and `scripts` of t/<name> to `dir`
// and installs the locked packages there (`npm ci`) when the lock file
// changed since the last install. Empty when ready, otherwise why not.
inline std::string install_packages(const std::string& name, const std::vector<std::string>& scripts, const fs::path& dir) {
    if (run_command({"sh", "-c", "command -v node && command -v npm"}).exit_code != 0) {
        return "nodejs and npm are not installed (scripts/install-deps installs them)";
    }
    const fs::path sources = source_dir() / "t" / name;
    fs::create_directories(dir);
    std::vector<std::string> files = {"package.json", "package-lock.json"};
    files.insert(files.end(), scripts.begin(), scripts.end());
    for (const auto& file : files) fs::copy_file(sources / file, dir / file, fs::copy_options::overwrite_existing);
    const fs::path stamp = dir / "node_modules" / ".installed-lock";
    const std::string lock = read_file(sources / "package-lock.json");
    if (fs::exists(stamp) && read_file(stamp) == lock) return "";
    // No install scripts: nothing is built or downloaded beside the registry
    // (dhive's native secp256k1 falls back to its pure JavaScript code).
    auto npm = run_command({"npm", "ci", "--prefix", dir.string(), "--ignore-scripts", "--no-audit", "--no-fund",
                            "--fetch-retries=1", "--fetch-timeout=30000"},
                           {}, 240s);
    if (npm.exit_code != 0) {
        return "npm cannot install the pinned packages of t/" + name + " (no access to the npm registry?): " +
               npm.output.substr(npm.output.size() > 1500 ? npm.output.size() - 1500 : 0);
    }
    write_file(stamp, lock);
    return "";
}

// CI installs Node.js, the pinned packages and Chromium (scripts/install-deps,
// npm ci): there a missing one is a failure, not a skip.
inline bool missing_tools_fail() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && std::string(ci) == "true";
}

}  // namespace npm_test
