#include "wallet/stop_signals.hpp"

#include <cstring>
#include <utility>

#include "wallet/log.hpp"

namespace wallet {

StopSignals::StopSignals(std::string then) : then_(std::move(then)) {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
    signal(SIGPIPE, SIG_IGN);
    thread_ = std::jthread([this](std::stop_token done) { wait(std::move(done)); });
}

void StopSignals::wait(std::stop_token done) {
    // Polls, so that a stop requested in code or the destructor ends it too.
    const timespec poll{0, 200'000'000};
    while (!stop_.stop_requested() && !done.stop_requested()) {
        const int signal_number = sigtimedwait(&signals_, nullptr, &poll);
        if (signal_number > 0) {
            log_info(std::string("received ") + sigabbrev_np(signal_number) + ": " + then_);
            stop_.request_stop();
        }
    }
}

}  // namespace wallet
