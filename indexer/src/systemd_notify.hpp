// sd_notify(3) without libsystemd: state lines sent as datagrams to the unix
// socket named by $NOTIFY_SOCKET (a leading '@' means the abstract
// namespace). A no-op when the variable is unset (not run by systemd).
#pragma once

#include <chrono>
#include <string_view>

namespace wallet::indexer {

class SystemdNotifier {
public:
    SystemdNotifier();  // reads NOTIFY_SOCKET and WATCHDOG_USEC
    ~SystemdNotifier();
    SystemdNotifier(const SystemdNotifier&) = delete;
    SystemdNotifier& operator=(const SystemdNotifier&) = delete;

    // "READY=1", "STOPPING=1", "STATUS=...". Failures are ignored: the
    // service manager is an observer, never a reason to stop indexing.
    void notify(std::string_view state);
    // WATCHDOG=1, at most twice per watchdog interval.
    void keep_alive();

private:
    int socket_ = -1;
    std::string_view::size_type address_length_ = 0;
    char address_[128] = {};
    std::chrono::microseconds watchdog_interval_{0};
    std::chrono::steady_clock::time_point last_keep_alive_{};
};

}  // namespace wallet::indexer
