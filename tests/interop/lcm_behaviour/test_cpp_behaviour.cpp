// lcm-cpp.hpp where Nerve's must behave as LCM 1.5.3's: memq keeps every publication until handle() takes it, two
// threads in handle() at once, file:// playback one event per call, handleTimeout edges and queue capacities.
#include <gtest/gtest.h>
#include <lcm/lcm-cpp.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Handler {
    std::vector<int> values;
    void on(const lcm::ReceiveBuffer *rbuf, const std::string &)
    {
        values.push_back(rbuf->data_size ? static_cast<unsigned char *>(rbuf->data)[0] : -1);
    }
};

void publish_n(lcm::LCM &lc, const std::string &channel, int n)
{
    for (int i = 0; i < n; i++) {
        unsigned char b = (unsigned char) i;
        ASSERT_EQ(0, lc.publish(channel, &b, 1));
    }
}

}  // namespace

TEST(LCM_CPP_memq, PublishedBeforeHandleAllArriveInOrder)
{
    lcm::LCM lc("memq://");
    ASSERT_TRUE(lc.good());
    Handler h;
    ASSERT_NE(nullptr, lc.subscribe("A", &Handler::on, &h));
    publish_n(lc, "A", 100);
    for (int k = 0; k < 100; k++) ASSERT_EQ(0, lc.handle()) << "call " << k;
    ASSERT_EQ(100u, h.values.size());
    for (int k = 0; k < 100; k++) EXPECT_EQ(k, h.values[k]);
    EXPECT_EQ(0, lc.handleTimeout(0));
}

TEST(LCM_CPP_memq, QueueCapacityOneZeroAndNegativeLoseNothing)
{
    for (int cap : {1, 0, -1}) {
        lcm::LCM lc("memq://");
        Handler h;
        lcm::Subscription *sub = lc.subscribe("A", &Handler::on, &h);
        ASSERT_EQ(0, sub->setQueueCapacity(cap));
        publish_n(lc, "A", 50);
        int handled = 0;
        while (handled < 60 && lc.handleTimeout(20) > 0) handled++;
        EXPECT_EQ(50, handled) << "capacity " << cap;
    }
}

TEST(LCM_CPP_handle, TimeoutEdges)
{
    lcm::LCM lc("memq://");
    Handler h;
    lc.subscribe("A", &Handler::on, &h);
    EXPECT_EQ(0, lc.handleTimeout(0));
    EXPECT_LT(lc.handleTimeout(-1), 0);
    publish_n(lc, "A", 1);
    EXPECT_GT(lc.handleTimeout(0x7fffffff), 0);
}

TEST(LCM_CPP_handle, SecondThreadTimesOutWhileTheFirstWaits)
{
    lcm::LCM lc("memq://");
    Handler h;
    lc.subscribe("A", &Handler::on, &h);
    std::atomic<int> first(-2);
    std::thread a([&] { first = lc.handleTimeout(400); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto t0 = std::chrono::steady_clock::now();
    int second = lc.handleTimeout(10);
    auto waited = std::chrono::steady_clock::now() - t0;
    a.join();
    EXPECT_EQ(0, first.load());
    EXPECT_EQ(0, second);
    // LCM waits for a message outside its handle mutex: the second call's 10 ms run while the first still waits.
    EXPECT_LT(waited, std::chrono::milliseconds(200));
}

TEST(LCM_CPP_file, PlaybackGivesEventKOnCallK)
{
    char path[] = "/tmp/lcm_behaviour_cpp_XXXXXX";
    close(mkstemp(path));
    {
        lcm::LogFile log(path, "w");
        ASSERT_TRUE(log.good());
        for (int i = 0; i < 100; i++) {
            unsigned char b = (unsigned char) i;
            lcm::LogEvent ev;
            ev.eventnum = i;
            ev.timestamp = 1000000000 + i * 1000;
            ev.channel = "CH";
            ev.datalen = 1;
            ev.data = &b;
            ASSERT_EQ(0, log.writeEvent(&ev));
        }
    }
    lcm::LCM lc(std::string("file://") + path + "?mode=r");
    ASSERT_TRUE(lc.good());
    Handler h;
    lc.subscribe("CH", &Handler::on, &h);
    for (int k = 0; k < 100; k++) {
        ASSERT_EQ(0, lc.handle()) << "call " << k;
        ASSERT_EQ((size_t) k + 1, h.values.size()) << "call " << k;
        ASSERT_EQ(k, h.values[k]);
    }
    EXPECT_EQ(-1, lc.handle());
    EXPECT_LT(lc.handleTimeout(100), 0);
    unlink(path);
}
