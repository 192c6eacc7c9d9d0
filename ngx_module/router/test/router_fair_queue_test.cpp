// Unit tests of router::FairQueue: calls waiting for a URL's upstream
// connections are served in turn across client addresses, each address at
// most its share in service, the router's own polls first.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "router_fair_queue.hpp"

using router::FairQueue;

namespace {

// Pops every item that may start, marking each started: "owner:item" in order.
std::vector<std::string> drain(FairQueue<int>& queue) {
    std::vector<std::string> order;
    while (auto next = queue.pop()) {
        queue.started(next->first);
        order.push_back(next->first + ":" + std::to_string(next->second));
    }
    return order;
}

}  // namespace

TEST(RouterFairQueue, AddressesAreServedInTurnNotInArrivalOrder) {
    FairQueue<int> queue;
    for (int i = 1; i <= 4; ++i) queue.push("a", i);  // a long backlog first
    queue.push("b", 10);
    queue.push("c", 20);
    queue.push("b", 11);
    EXPECT_EQ(queue.size(), 7u);
    EXPECT_EQ(drain(queue), (std::vector<std::string>{"a:1", "b:10", "c:20", "a:2", "b:11", "a:3", "a:4"}));
    EXPECT_TRUE(queue.empty());
}

TEST(RouterFairQueue, AnAddressAtItsShareWaitsWhileOthersGoOn) {
    FairQueue<int> queue(2);
    queue.started("a");
    queue.started("a");  // a holds its two connections
    EXPECT_FALSE(queue.may_start("a"));
    EXPECT_TRUE(queue.may_start("b"));
    for (int i = 1; i <= 3; ++i) queue.push("a", i);
    queue.push("b", 10);
    EXPECT_EQ(drain(queue), (std::vector<std::string>{"b:10"}));
    EXPECT_EQ(queue.size(), 3u);
    queue.ended("a");  // one of a's calls came back: its next one may go
    EXPECT_EQ(drain(queue), (std::vector<std::string>{"a:1"}));
    EXPECT_EQ(queue.in_service("a"), 2u);
    EXPECT_EQ(queue.in_service("b"), 1u);
}

TEST(RouterFairQueue, TheRoutersOwnPollsGoFirstUncapped) {
    FairQueue<int> queue(1);
    queue.push("a", 1);
    queue.push("", 99);
    queue.push("", 98);
    EXPECT_TRUE(queue.may_start(""));
    EXPECT_EQ(drain(queue), (std::vector<std::string>{":99", ":98", "a:1"}));
    EXPECT_EQ(queue.in_service(""), 0u);
}

TEST(RouterFairQueue, ACallThatGivesUpLeavesItsLine) {
    FairQueue<int> queue;
    queue.push("a", 1);
    queue.push("b", 10);
    queue.push("a", 2);
    EXPECT_TRUE(queue.erase("b", 10));
    EXPECT_FALSE(queue.erase("b", 10));
    EXPECT_TRUE(queue.erase("a", 1));
    EXPECT_EQ(queue.size(), 1u);
    EXPECT_EQ(drain(queue), (std::vector<std::string>{"a:2"}));
    queue.ended("a");
    queue.ended("a");  // more ends than starts: nothing goes negative
    EXPECT_EQ(queue.in_service("a"), 0u);
}
