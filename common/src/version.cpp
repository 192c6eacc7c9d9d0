// The one translation unit that holds the version (set per build by
// scripts/package from git), so a new version recompiles only this file.
#include "wallet/cli_options.hpp"

namespace wallet {

const char* package_version() { return WALLET_PACKAGE_VERSION; }

}  // namespace wallet
