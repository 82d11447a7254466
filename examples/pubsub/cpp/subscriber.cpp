// subscriber [--url URL] [--channel NAME] [--count N] [--timeout SECONDS]: prints the first N laser scans
// (exlcm::laser_t) that arrive on a channel of Nerve's bus, one line each; exits 1 if none arrives for SECONDS.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nerve/nerve.hpp>

#include "exlcm/laser_t.hpp"

int main(int argc, char **argv)
{
    std::string url = "udpm://239.255.76.67:7667?ttl=0", channel = "EXLASER";
    int count = 10;
    double timeout = 10;
    int i = 1;
    for (; i + 1 < argc; i += 2) {
        std::string opt = argv[i];
        if (opt == "--url") url = argv[i + 1];
        else if (opt == "--channel") channel = argv[i + 1];
        else if (opt == "--count") count = std::atoi(argv[i + 1]);
        else if (opt == "--timeout") timeout = std::atof(argv[i + 1]);
        else break;
    }
    if (i != argc || count < 0 || timeout <= 0) {
        std::fprintf(stderr, "usage: %s [--url URL] [--channel NAME] [--count N] [--timeout SECONDS]\n", argv[0]);
        return 2;
    }
    try {
        nerve::Bus bus(url);
        int received = 0;
        auto sub = bus.subscribe<exlcm::laser_t>(
            channel,
            [&](const nerve::Message &, const exlcm::laser_t &scan) {
                std::printf("laser_t utime=%lld nranges=%d ranges=[", (long long) scan.utime, int(scan.nranges));
                for (size_t b = 0; b < scan.ranges.size(); b++)
                    std::printf("%s%.2f", b ? " " : "", scan.ranges[b]);
                std::printf("] rad0=%.4f radstep=%.4f\n", scan.rad0, scan.radstep);
                std::fflush(stdout);
                received++;
            },
            100);
        std::fprintf(stderr, "waiting for %d laser_t on %s at %s\n", count, channel.c_str(), url.c_str());
        auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(timeout));
        while (received < count) {
            if (!bus.handle(wait)) {
                std::fprintf(stderr, "timed out after %d of %d scans\n", received, count);
                return 1;
            }
        }
    } catch (const nerve::Error &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
