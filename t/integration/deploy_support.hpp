// Shared by the deploy_* tests: the package deploy_package_builds made.
#pragma once

#include "harness/harness.hpp"

namespace deploy_test {

// The newest hive-wallet_*.deb in build/deploy (its version comes from git,
// so the name is not known in advance).
inline harness::fs::path built_package() {
    harness::fs::path newest;
    for (const auto& entry : harness::fs::directory_iterator(harness::binary_dir() / "deploy")) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("hive-wallet_", 0) != 0 || entry.path().extension() != ".deb") continue;
        if (newest.empty() || harness::fs::last_write_time(entry.path()) > harness::fs::last_write_time(newest)) {
            newest = entry.path();
        }
    }
    return newest;
}

}  // namespace deploy_test
