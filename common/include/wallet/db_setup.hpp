// Provisioning of a fresh (or existing) database: the two roles, the database
// owned by the writer, privileges, and the schema migrations. This is the only
// code that works as the cluster superuser; everything else uses the roles.
#pragma once

#include "wallet/config.hpp"
#include <optional>

#include "wallet/result.hpp"

namespace wallet {

inline constexpr const char* kWriterRole = "wallet_writer";
inline constexpr const char* kReaderRole = "wallet_api_reader";

// Idempotent: creates or updates both roles (passwords, no superuser rights),
// creates the database if missing, sets the reader's statement timeout, then
// applies the migrations as the writer (those up to `up_to_version` only,
// when given: an upgrade in stages). Returns the schema version.
Result<int> provision_database(const Settings& settings, std::optional<int> up_to_version = std::nullopt);

}  // namespace wallet
