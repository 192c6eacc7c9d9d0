// URLs as they may appear in logs and progress output.
#pragma once

#include <string>

namespace wallet {

// The URL without the user:password@ part it may carry.
std::string loggable_url(const std::string& url);

}  // namespace wallet
