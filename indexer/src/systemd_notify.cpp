#include "systemd_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace wallet::indexer {

SystemdNotifier::SystemdNotifier() {
    const char* path = std::getenv("NOTIFY_SOCKET");
    if (path == nullptr || path[0] == '\0') return;
    const std::size_t length = std::strlen(path);
    sockaddr_un probe{};
    if ((path[0] != '/' && path[0] != '@') || length >= sizeof(probe.sun_path)) return;
    socket_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (socket_ < 0) return;
    std::memcpy(address_, path, length);
    if (address_[0] == '@') address_[0] = '\0';  // abstract namespace
    address_length_ = length;
    if (const char* usec = std::getenv("WATCHDOG_USEC"); usec != nullptr) {
        watchdog_interval_ = std::chrono::microseconds(std::strtoll(usec, nullptr, 10));
    }
}

SystemdNotifier::~SystemdNotifier() {
    if (socket_ >= 0) ::close(socket_);
}

void SystemdNotifier::notify(std::string_view state) {
    if (socket_ < 0) return;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, address_, address_length_);
    const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_length_);
    // The notify protocol is one datagram per message; a lost one is harmless.
    [[maybe_unused]] const ssize_t sent =
        ::sendto(socket_, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&address), size);
}

void SystemdNotifier::keep_alive() {
    if (socket_ < 0 || watchdog_interval_.count() <= 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_keep_alive_ < watchdog_interval_ / 2) return;
    last_keep_alive_ = now;
    notify("WATCHDOG=1");
}

}  // namespace wallet::indexer
