// nerve.hpp from C++17: typed publish and subscribe over generated exlcm::example_t, lambdas, RAII.
//   send URL N     N typed messages on EXAMPLE (name "from nerve.hpp")
//   listen URL N   prints N typed messages from EXAMPLE
//   selftest       own messages, a raw and a typed subscription, decode errors counted, exceptions
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <nerve/nerve.hpp>

#include "exlcm/example_t.hpp"

using namespace std::chrono_literals;

static void print(const nerve::Message &m, const exlcm::example_t &v)
{
    std::printf("%.*s: ts=%" PRId64 " ranges=[", (int) m.channel.size(), m.channel.data(), v.timestamp);
    for (int k = 0; k < v.num_ranges; k++)
        std::printf("%s%d", k ? "," : "", v.ranges[k]);
    std::printf("] name='%s'\n", v.name.c_str());
    std::fflush(stdout);
}

static exlcm::example_t make(int i)
{
    exlcm::example_t v{};
    v.timestamp = i;
    v.num_ranges = 2;
    v.ranges = {int16_t(i), int16_t(i + 1)};
    v.name = "from nerve.hpp";
    return v;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !std::strcmp(argv[1], "send")) {
        nerve::Bus bus(argv[2]);
        std::this_thread::sleep_for(300ms);
        for (int i = 0; i < std::atoi(argv[3]); i++) {
            bus.publish("EXAMPLE", make(i));
            std::this_thread::sleep_for(20ms);
        }
        return 0;
    }
    if (argc >= 4 && !std::strcmp(argv[1], "listen")) {
        nerve::Bus bus(argv[2]);
        int n = std::atoi(argv[3]), count = 0;
        auto sub = bus.subscribe<exlcm::example_t>("EXAMPLE", [&](const nerve::Message &m, const exlcm::example_t &v) {
            count++;
            print(m, v);
        });
        for (int tries = 0; count < n && tries < 100; tries++)
            bus.handle(100ms);
        return count == n ? 0 : 1;
    }
    if (argc >= 2 && !std::strcmp(argv[1], "selftest")) {
        try {
            nerve::Bus bad("no-such-provider://");
            return 1;
        } catch (const nerve::Error &e) {
            std::printf("construction failure throws: %s\n", nerve_status_string(e.status()));
        }
        nerve::Bus bus("memq://");
        int raw = 0;
        auto typed = bus.subscribe<exlcm::example_t>("EXAMPLE", [](const nerve::Message &m, const exlcm::example_t &v) {
            print(m, v);
        });
        {
            auto r = bus.subscribe("EXAMPLE", [&raw](const nerve::Message &) { raw++; });
            bus.publish("EXAMPLE", make(1));
            bus.publish("EXAMPLE", "not an example", 14);
            while (bus.handle(100ms)) {
            }
        }  // r ends here
        bus.publish("EXAMPLE", make(2));
        while (bus.handle(100ms)) {
        }
        std::printf("raw %d decode errors %" PRIu64 " delivered %" PRIu64 "\n", raw, typed.decode_errors(),
                    typed.stats().delivered);
        return 0;
    }
    std::fprintf(stderr, "usage: see the comment at the top of bus_cpp.cpp\n");
    return 2;
}
