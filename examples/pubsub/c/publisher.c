/* publisher [--url URL] [--channel NAME] [--count N] [--rate HZ]: publishes N laser scans (exlcm.laser_t) on a
 * channel of Nerve's bus, HZ a second. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <nerve/nerve.h>

#include "exlcm_laser_t.h"

#define BEAMS 5

static int64_t now_utime(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t) tv.tv_sec * 1000000 + tv.tv_usec;
}

int main(int argc, char **argv)
{
    const char *url = "udpm://239.255.76.67:7667?ttl=0", *channel = "EXLASER";
    int count = 10, i, b;
    double rate = 10;
    nerve_bus *bus;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--url")) url = argv[i + 1];
        else if (!strcmp(argv[i], "--channel")) channel = argv[i + 1];
        else if (!strcmp(argv[i], "--count")) count = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rate")) rate = atof(argv[i + 1]);
        else break;
    }
    if (i != argc || count < 0 || rate <= 0) {
        fprintf(stderr, "usage: %s [--url URL] [--channel NAME] [--count N] [--rate HZ]\n", argv[0]);
        return 2;
    }
    if (nerve_bus_open(url, &bus) != NERVE_OK) {
        fprintf(stderr, "cannot open %s: %s\n", url, nerve_last_error());
        return 1;
    }
    for (i = 0; i < count; i++) {
        float ranges[BEAMS];
        exlcm_laser_t scan;
        unsigned char buf[256];
        struct timespec period = {(time_t) (1 / rate), (long) ((1 / rate - (time_t) (1 / rate)) * 1e9)};
        int len;
        for (b = 0; b < BEAMS; b++)
            ranges[b] = 1.0f + (float) i + 0.25f * (float) b;
        scan.utime = now_utime();
        scan.nranges = BEAMS;
        scan.ranges = ranges;
        scan.rad0 = -1.5707964f;
        scan.radstep = 0.017453292f;
        len = exlcm_laser_t_encode(buf, 0, sizeof buf, &scan);
        if (len < 0 || nerve_bus_publish(bus, channel, buf, (size_t) len) != NERVE_OK) {
            fprintf(stderr, "cannot publish on %s: %s\n", channel, nerve_last_error());
            nerve_bus_close(bus);
            return 1;
        }
        printf("published scan %d on %s\n", i, channel);
        fflush(stdout);
        nanosleep(&period, NULL);
    }
    nerve_bus_close(bus);
    return 0;
}
