// publisher [--url URL] [--channel NAME] [--count N] [--rate HZ]: publishes N laser scans (exlcm::laser_t) on a
// channel of Nerve's bus, HZ a second.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <nerve/nerve.hpp>

#include "exlcm/laser_t.hpp"

int main(int argc, char **argv)
{
    std::string url = "udpm://239.255.76.67:7667?ttl=0", channel = "EXLASER";
    int count = 10;
    double rate = 10;
    int i = 1;
    for (; i + 1 < argc; i += 2) {
        std::string opt = argv[i];
        if (opt == "--url") url = argv[i + 1];
        else if (opt == "--channel") channel = argv[i + 1];
        else if (opt == "--count") count = std::atoi(argv[i + 1]);
        else if (opt == "--rate") rate = std::atof(argv[i + 1]);
        else break;
    }
    if (i != argc || count < 0 || rate <= 0) {
        std::fprintf(stderr, "usage: %s [--url URL] [--channel NAME] [--count N] [--rate HZ]\n", argv[0]);
        return 2;
    }
    try {
        nerve::Bus bus(url);
        for (int n = 0; n < count; n++) {
            exlcm::laser_t scan;
            scan.utime = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
            for (int b = 0; b < 5; b++)
                scan.ranges.push_back(1.0f + float(n) + 0.25f * float(b));
            scan.nranges = int32_t(scan.ranges.size());
            scan.rad0 = -1.5707964f;
            scan.radstep = 0.017453292f;
            bus.publish(channel, scan);
            std::printf("published scan %d on %s\n", n, channel.c_str());
            std::fflush(stdout);
            std::this_thread::sleep_for(std::chrono::duration<double>(1 / rate));
        }
    } catch (const nerve::Error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
