// LCM's C API (lcm/lcm.h) where Nerve's liblcm must behave as LCM 1.5.3 does: memq keeps every publication until
// lcm_handle takes it, two threads in lcm_handle at once, file:// playback one event per call, and the edge cases
// of lcm_handle_timeout, unsubscribing inside a handler and queue capacities. Written as LCM's test/c tests are
// (GoogleTest over the C API) and run against both libraries with the same expectations.
#include <gtest/gtest.h>
#include <lcm/lcm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Got {
    std::vector<int> values;
    lcm_t *lcm = nullptr;
    lcm_subscription_t *sub = nullptr;
    bool unsubscribe = false;
};

void on_message(const lcm_recv_buf_t *rbuf, const char *, void *user)
{
    Got *g = static_cast<Got *>(user);
    g->values.push_back(rbuf->data_size ? static_cast<unsigned char *>(rbuf->data)[0] : -1);
    if (g->unsubscribe) {
        EXPECT_EQ(0, lcm_unsubscribe(g->lcm, g->sub));
        g->unsubscribe = false;
    }
}

void publish_n(lcm_t *lcm, const char *channel, int n)
{
    for (int i = 0; i < n; i++) {
        unsigned char b = (unsigned char) i;
        ASSERT_EQ(0, lcm_publish(lcm, channel, &b, 1));
    }
}

std::string temp_log()
{
    char path[] = "/tmp/lcm_behaviour_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    return path;
}

// A log of n one-byte events 0..n-1 on `channel`, `gap_us` apart, written with LCM's eventlog API.
std::string write_log(int n, const char *channel, int64_t gap_us)
{
    std::string path = temp_log();
    lcm_eventlog_t *log = lcm_eventlog_create(path.c_str(), "w");
    EXPECT_NE(nullptr, log);
    for (int i = 0; i < n; i++) {
        unsigned char b = (unsigned char) i;
        lcm_eventlog_event_t ev;
        memset(&ev, 0, sizeof ev);
        ev.timestamp = 1000000000 + i * gap_us;
        ev.channellen = (int32_t) strlen(channel);
        ev.datalen = 1;
        ev.channel = const_cast<char *>(channel);
        ev.data = &b;
        EXPECT_EQ(0, lcm_eventlog_write_event(log, &ev));
    }
    lcm_eventlog_destroy(log);
    return path;
}

}  // namespace

TEST(LCM_C_memq, PublishedBeforeHandleAllArriveInOrder)
{
    lcm_t *lcm = lcm_create("memq://");
    ASSERT_NE(nullptr, lcm);
    Got got;
    ASSERT_NE(nullptr, lcm_subscribe(lcm, "A", on_message, &got));
    publish_n(lcm, "A", 100);
    for (int k = 0; k < 100; k++) {
        ASSERT_GT(lcm_handle_timeout(lcm, 1000), 0) << "call " << k;
    }
    ASSERT_EQ(100u, got.values.size());
    for (int k = 0; k < 100; k++) EXPECT_EQ(k, got.values[k]);
    EXPECT_EQ(0, lcm_handle_timeout(lcm, 0));
    lcm_destroy(lcm);
}

TEST(LCM_C_memq, HandleDispatchesEveryQueuedMessage)
{
    lcm_t *lcm = lcm_create("memq://");
    Got got;
    ASSERT_NE(nullptr, lcm_subscribe(lcm, "A", on_message, &got));
    publish_n(lcm, "A", 100);
    for (int k = 0; k < 100; k++) ASSERT_EQ(0, lcm_handle(lcm));
    EXPECT_EQ(100u, got.values.size());
    lcm_destroy(lcm);
}

TEST(LCM_C_memq, QueueCapacityOneZeroAndNegativeLoseNothing)
{
    for (int cap : {1, 0, -1}) {
        lcm_t *lcm = lcm_create("memq://");
        Got got;
        lcm_subscription_t *sub = lcm_subscribe(lcm, "A", on_message, &got);
        ASSERT_EQ(0, lcm_subscription_set_queue_capacity(sub, cap));
        publish_n(lcm, "A", 50);
        int handled = 0;
        while (handled < 60 && lcm_handle_timeout(lcm, 20) > 0) handled++;
        EXPECT_EQ(50, handled) << "capacity " << cap;
        EXPECT_EQ(50u, got.values.size()) << "capacity " << cap;
        lcm_destroy(lcm);
    }
}

TEST(LCM_C_memq, PublishedBeforeSubscribingIsNotDelivered)
{
    lcm_t *lcm = lcm_create("memq://");
    Got got;
    unsigned char b = 1;
    ASSERT_EQ(0, lcm_publish(lcm, "A", &b, 1));
    ASSERT_NE(nullptr, lcm_subscribe(lcm, "A", on_message, &got));
    EXPECT_EQ(0, lcm_handle_timeout(lcm, 50));
    EXPECT_TRUE(got.values.empty());
    lcm_destroy(lcm);
}

TEST(LCM_C_memq, UnsubscribeInsideHandlerStopsLaterDispatches)
{
    lcm_t *lcm = lcm_create("memq://");
    Got got;
    got.lcm = lcm;
    got.sub = lcm_subscribe(lcm, "A", on_message, &got);
    got.unsubscribe = true;
    publish_n(lcm, "A", 3);
    EXPECT_GT(lcm_handle_timeout(lcm, 100), 0);
    for (int k = 0; k < 2; k++) lcm_handle_timeout(lcm, 20);  // what these return differs: docs/lcm-differences.md
    EXPECT_EQ(1u, got.values.size());
    lcm_destroy(lcm);
}

TEST(LCM_C_handle, TimeoutEdges)
{
    lcm_t *lcm = lcm_create("memq://");
    Got got;
    ASSERT_NE(nullptr, lcm_subscribe(lcm, "A", on_message, &got));
    EXPECT_EQ(0, lcm_handle_timeout(lcm, 0));
    EXPECT_LT(lcm_handle_timeout(lcm, -1), 0);
    publish_n(lcm, "A", 1);
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_GT(lcm_handle_timeout(lcm, 0x7fffffff), 0);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    publish_n(lcm, "A", 1);
    EXPECT_GT(lcm_handle_timeout(lcm, 0), 0);
    lcm_destroy(lcm);
}

TEST(LCM_C_handle, SecondThreadTimesOutWhileTheFirstWaits)
{
    lcm_t *lcm = lcm_create("memq://");
    Got got;
    ASSERT_NE(nullptr, lcm_subscribe(lcm, "A", on_message, &got));
    std::atomic<int> first(-2), second(-2);
    std::thread a([&] { first = lcm_handle_timeout(lcm, 400); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto t0 = std::chrono::steady_clock::now();
    second = lcm_handle_timeout(lcm, 10);
    auto waited = std::chrono::steady_clock::now() - t0;
    a.join();
    EXPECT_EQ(0, first.load());
    EXPECT_EQ(0, second.load());
    // LCM waits for a message outside its handle mutex: the second call's 10 ms run while the first still waits.
    EXPECT_LT(waited, std::chrono::milliseconds(200));
    // Both threads in lcm_handle (LCM's handle mutex holds the second until the first returns): one message each,
    // neither lost nor doubled.
    std::thread b([&] { first = lcm_handle(lcm); });
    std::thread c([&] { second = lcm_handle(lcm); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    publish_n(lcm, "A", 2);
    b.join();
    c.join();
    EXPECT_EQ(0, first.load());
    EXPECT_EQ(0, second.load());
    EXPECT_EQ(2u, got.values.size());
    lcm_destroy(lcm);
}

TEST(LCM_C_file, PlaybackGivesEventKOnCallK)
{
    for (const char *speed : {"", "&speed=0"}) {
        std::string path = write_log(100, "CH", 1000);
        std::string url = "file://" + path + "?mode=r" + speed;
        lcm_t *lcm = lcm_create(url.c_str());
        ASSERT_NE(nullptr, lcm) << url;
        Got got;
        ASSERT_NE(nullptr, lcm_subscribe(lcm, "CH", on_message, &got));
        for (int k = 0; k < 100; k++) {
            ASSERT_EQ(0, lcm_handle(lcm)) << url << " call " << k;
            ASSERT_EQ((size_t) k + 1, got.values.size()) << url << " call " << k;
            ASSERT_EQ(k, got.values[k]) << url;
        }
        EXPECT_EQ(-1, lcm_handle(lcm)) << url;
        EXPECT_EQ(-1, lcm_handle(lcm)) << url;
        EXPECT_LT(lcm_handle_timeout(lcm, 100), 0) << url;
        lcm_destroy(lcm);
        unlink(path.c_str());
    }
}

TEST(LCM_C_providers, UrlList)
{
    for (const char *url : {"udpm://239.255.76.91:7991?ttl=0", "mpudpm://239.255.76.91:7991?ttl=0", "memq://"}) {
        lcm_t *lcm = lcm_create(url);
        EXPECT_NE(nullptr, lcm) << url;
        lcm_destroy(lcm);
    }
    std::string path = temp_log();
    std::string url = "file://" + path + "?mode=w";
    lcm_t *w = lcm_create(url.c_str());
    EXPECT_NE(nullptr, w);
    lcm_destroy(w);
    unlink(path.c_str());
    EXPECT_EQ(nullptr, lcm_create("file:///nonexistent_dir/x.lcm?mode=r"));
    EXPECT_EQ(nullptr, lcm_create("bogus://"));
    // No tcpq server listens here: LCM fails to connect; Nerve has no tcpq provider. Both: NULL.
    EXPECT_EQ(nullptr, lcm_create("tcpq://127.0.0.1:1"));
}
