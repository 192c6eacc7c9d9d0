#include "wallet/stop_signals.hpp"

#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace wallet {
namespace {

bool becomes_requested(const StopSignals& stop) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!stop.stop_requested() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return stop.stop_requested();
}

TEST(StopSignals, SigtermIsAStopRequestNotTheEndOfTheProcess) {
    StopSignals stop("stopping the test");
    EXPECT_FALSE(stop.stop_requested());
    ASSERT_EQ(kill(getpid(), SIGTERM), 0);  // blocked: waits for the signal thread
    EXPECT_TRUE(becomes_requested(stop));
    EXPECT_TRUE(stop.token().stop_requested());
}

TEST(StopSignals, EndsItsThreadWithoutASignal) {
    { StopSignals stop("unused"); }
    SUCCEED();  // the destructor joined the signal thread
}

}  // namespace
}  // namespace wallet
