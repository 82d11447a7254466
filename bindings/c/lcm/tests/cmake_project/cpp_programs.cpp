// C++ LCM programs in the style of LCM's C++ examples (listener.cpp, send_message.cpp, read_log.cpp), over C++
// generated from example_t.lcm:
//   selftest URL      typed member-function, lambda and function handlers, a raw handler, unsubscribe
//   send URL N / listen URL N
//   log-write PATH / log-read PATH   lcm::LogFile
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <string>
#include <thread>

#include <lcm/lcm-cpp.hpp>

#include "exlcm/example_t.hpp"

static exlcm::example_t make(int i, const char *name)
{
    exlcm::example_t m;
    m.timestamp = 1000 + i;
    for (int k = 0; k < 3; k++)
        m.position[k] = i + k * 0.5;
    for (int k = 0; k < 4; k++)
        m.orientation[k] = -k - i;
    m.num_ranges = i % 5;
    m.ranges.resize(m.num_ranges);
    for (int k = 0; k < m.num_ranges; k++)
        m.ranges[k] = (int16_t) (k * 100 - i);
    m.name = name;
    m.enabled = (i & 1) != 0;
    return m;
}

static void print(const char *who, const std::string &channel, const exlcm::example_t *m)
{
    printf("%s %s: ts=%" PRId64 " pos=(%g,%g,%g) ranges=[", who, channel.c_str(), m->timestamp, m->position[0],
           m->position[1], m->position[2]);
    for (int k = 0; k < m->num_ranges; k++)
        printf("%s%d", k ? "," : "", m->ranges[k]);
    printf("] name='%s' enabled=%d\n", m->name.c_str(), (int) m->enabled);
    fflush(stdout);
}

class Handler {
  public:
    int typed = 0, raw = 0;
    void onMessage(const lcm::ReceiveBuffer *rbuf, const std::string &channel, const exlcm::example_t *msg)
    {
        (void) rbuf;
        typed++;
        print("member", channel, msg);
    }
    void onRaw(const lcm::ReceiveBuffer *rbuf, const std::string &channel)
    {
        raw++;
        printf("raw %s: %u bytes\n", channel.c_str(), rbuf->data_size);
    }
};

static void onFunction(const lcm::ReceiveBuffer *, const std::string &channel, const exlcm::example_t *msg, int *count)
{
    (*count)++;
    print("function", channel, msg);
}

static int selftest(const std::string &url)
{
    lcm::LCM lc(url);
    if (!lc.good())
        return 1;
    Handler h;
    int lambda_count = 0, function_count = 0;
    lcm::Subscription *member = lc.subscribe("EXAMPLE", &Handler::onMessage, &h);
    lc.subscribe("EXAMPLE|OTHER", &Handler::onRaw, &h);
    lc.subscribe<exlcm::example_t>("EXAMPLE",
                                   [&lambda_count](const lcm::ReceiveBuffer *, const std::string &channel,
                                                   const exlcm::example_t *msg) {
                                       lambda_count++;
                                       print("lambda", channel, msg);
                                   });
    lc.subscribeFunction("EXAMPLE", &onFunction, &function_count);
    member->setQueueCapacity(50);
    for (int i = 0; i < 3; i++) {
        exlcm::example_t m = make(i, "cpp");
        if (lc.publish("EXAMPLE", &m) != 0)
            return 1;
        if (lc.handleTimeout(2000) <= 0)
            return 1;
    }
    lc.publish("OTHER", "not an example", 14);
    while (lc.handleTimeout(300) > 0) {
    }
    printf("unsubscribe member: %d\n", lc.unsubscribe(member));
    printf("unsubscribe again: %d\n", lc.unsubscribe(member));
    exlcm::example_t m = make(7, "after");
    lc.publish("EXAMPLE", &m);
    while (lc.handleTimeout(300) > 0) {
    }
    printf("typed %d raw %d lambda %d function %d\n", h.typed, h.raw, lambda_count, function_count);
    return 0;
}

static int send(const std::string &url, int n)
{
    lcm::LCM lc(url);
    if (!lc.good())
        return 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int i = 0; i < n; i++) {
        exlcm::example_t m = make(i, "from C++");
        if (lc.publish("EXAMPLE", &m) != 0)
            return 1;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return 0;
}

static int listen(const std::string &url, int n)
{
    lcm::LCM lc(url);
    if (!lc.good())
        return 1;
    int count = 0;
    lc.subscribe<exlcm::example_t>("EXAMPLE", [&count](const lcm::ReceiveBuffer *, const std::string &channel,
                                                       const exlcm::example_t *msg) {
        count++;
        print("C++", channel, msg);
    });
    for (int tries = 0; count < n && tries < 100; tries++)
        lc.handleTimeout(100);
    return count == n ? 0 : 1;
}

static int log_write(const std::string &path)
{
    lcm::LogFile log(path, "w");
    if (!log.good())
        return 1;
    for (int i = 0; i < 3; i++) {
        exlcm::example_t m = make(i, "logged");
        std::string buf(m.getEncodedSize(), '\0');
        m.encode(&buf[0], 0, (int) buf.size());
        lcm::LogEvent e;
        e.eventnum = 0;
        e.timestamp = 5000 + i;
        e.channel = "EXAMPLE";
        e.datalen = (int32_t) buf.size();
        e.data = &buf[0];
        if (log.writeEvent(&e) != 0)
            return 1;
    }
    return log.getFilePtr() ? 0 : 1;
}

static int log_read(const std::string &path)
{
    lcm::LogFile log(path, "r");
    if (!log.good())
        return 1;
    const lcm::LogEvent *e;
    while ((e = log.readNextEvent()) != NULL) {
        exlcm::example_t m;
        if (m.decode(e->data, 0, e->datalen) < 0)
            return 1;
        printf("event %" PRId64 " at %" PRId64 ": ", e->eventnum, e->timestamp);
        print("log", e->channel, &m);
    }
    printf("seek: %d\n", log.seekToTimestamp(5001));
    e = log.readNextEvent();
    printf("after seek: %" PRId64 "\n", e ? e->timestamp : -1);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "selftest"))
        return selftest(argv[2]);
    if (argc >= 4 && !strcmp(argv[1], "send"))
        return send(argv[2], atoi(argv[3]));
    if (argc >= 4 && !strcmp(argv[1], "listen"))
        return listen(argv[2], atoi(argv[3]));
    if (argc >= 3 && !strcmp(argv[1], "log-write"))
        return log_write(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "log-read"))
        return log_read(argv[2]);
    fprintf(stderr, "usage: see the comment at the top of cpp_programs.cpp\n");
    return 2;
}
