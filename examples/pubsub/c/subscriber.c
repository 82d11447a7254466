/* subscriber [--url URL] [--channel NAME] [--count N] [--timeout SECONDS]: prints the first N laser scans
 * (exlcm.laser_t) that arrive on a channel of Nerve's bus, one line each; exits 1 if none arrives for SECONDS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nerve/nerve.h>

#include "exlcm_laser_t.h"

static void on_scan(const nerve_received *m, void *user)
{
    int *received = (int *) user, b;
    exlcm_laser_t scan;
    if (exlcm_laser_t_decode(m->data, 0, (int) m->len, &scan) < 0) {
        fprintf(stderr, "not a laser_t on %s (%zu bytes)\n", m->channel, m->len);
        return;
    }
    printf("laser_t utime=%lld nranges=%d ranges=[", (long long) scan.utime, (int) scan.nranges);
    for (b = 0; b < scan.nranges; b++)
        printf("%s%.2f", b ? " " : "", scan.ranges[b]);
    printf("] rad0=%.4f radstep=%.4f\n", scan.rad0, scan.radstep);
    fflush(stdout);
    exlcm_laser_t_decode_cleanup(&scan);
    (*received)++;
}

int main(int argc, char **argv)
{
    const char *url = "udpm://239.255.76.67:7667?ttl=0", *channel = "EXLASER";
    int count = 10, received = 0, i, status = NERVE_OK;
    double timeout = 10;
    nerve_bus *bus;
    nerve_subscription *sub;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--url")) url = argv[i + 1];
        else if (!strcmp(argv[i], "--channel")) channel = argv[i + 1];
        else if (!strcmp(argv[i], "--count")) count = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--timeout")) timeout = atof(argv[i + 1]);
        else break;
    }
    if (i != argc || count < 0 || timeout <= 0) {
        fprintf(stderr, "usage: %s [--url URL] [--channel NAME] [--count N] [--timeout SECONDS]\n", argv[0]);
        return 2;
    }
    if (nerve_bus_open(url, &bus) != NERVE_OK ||
        nerve_bus_subscribe(bus, channel, 100, NERVE_DROP_OLDEST, on_scan, &received, &sub) != NERVE_OK) {
        fprintf(stderr, "cannot subscribe to %s on %s: %s\n", channel, url, nerve_last_error());
        return 1;
    }
    fprintf(stderr, "waiting for %d laser_t on %s at %s\n", count, channel, url);
    while (received < count && (status = nerve_bus_handle_timeout(bus, (int64_t) (timeout * 1e9))) == NERVE_OK)
        ;
    if (status != NERVE_OK)
        fprintf(stderr, "%s after %d of %d scans: %s\n", status == NERVE_TIMED_OUT ? "timed out" : "bus error",
                received, count, nerve_last_error());
    nerve_bus_close(bus);
    return received == count ? 0 : 1;
}
