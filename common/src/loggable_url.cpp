#include "wallet/loggable_url.hpp"

namespace wallet {

std::string loggable_url(const std::string& url) {
    const auto scheme = url.find("://");
    const auto at = url.find('@');
    const auto path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    if (scheme == std::string::npos || at == std::string::npos || (path != std::string::npos && at > path)) return url;
    return url.substr(0, scheme + 3) + url.substr(at + 1);
}

}  // namespace wallet
