// SIGTERM and SIGINT as a stop request, for the daemons' main(). The signals
// are blocked in every thread and taken by one thread (sigtimedwait), never
// by a handler, so the stop request runs in ordinary code. SIGPIPE is
// ignored: a peer that went away is an error return, not the end of the process.
#pragma once

#include <signal.h>

#include <stop_token>
#include <string>
#include <thread>

namespace wallet {

class StopSignals {
public:
    // Construct it before any other thread starts, so that they all inherit
    // the blocked signals. A signal is logged as "received SIGTERM: <then>".
    explicit StopSignals(std::string then);
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;
    // Destruction ends the signal thread; the signals stay blocked.

    std::stop_token token() const noexcept { return stop_.get_token(); }
    bool stop_requested() const noexcept { return stop_.stop_requested(); }
    void request_stop() noexcept { stop_.request_stop(); }

private:
    void wait(std::stop_token done);

    std::stop_source stop_;
    sigset_t signals_{};
    std::string then_;
    std::jthread thread_;  // last: started after, and joined before, what it reads
};

}  // namespace wallet
