/* A small LCM C program written the way LCM users write them, cross-built by scripts/build-windows against Nerve's
 * lcm.dll (bindings/c/lcm) and the C that `nerve gen -c` makes of examples/types/pose_t.lcm: lcm_create, the
 * generated exlcm_pose_t_publish / exlcm_pose_t_subscribe, and a loop that waits with select() on lcm_get_fileno()
 * (a SOCKET on Windows, as with LCM's own Windows build) before lcm_handle().
 *
 *   lcm_pose pub URL CHANNEL COUNT [PERIOD_MS]   publishes COUNT poses (utime 0, 1, ...; pos {utime, 2, 3}),
 *                                                 one every PERIOD_MS (50), then exits 0
 *   lcm_pose sub URL CHANNEL COUNT [TIMEOUT_S]    prints "ready", then "CHANNEL UTIME POS0" per pose received, and
 *                                                 exits 0 once COUNT have come, 1 if TIMEOUT_S (20) pass first
 *
 * A message that does not decode as exlcm_pose_t is the generated handler's to refuse (it says so on stderr); the
 * program carries on. */
#ifdef _WIN32
#include <winsock2.h>
#include <windows.h>
#define sleep_ms(ms) Sleep(ms)
#else
#include <sys/select.h>
#include <unistd.h>
#define sleep_ms(ms) usleep((ms) * 1000)
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lcm/lcm.h>

#include "exlcm_pose_t.h"

static int received;

static void on_pose(const lcm_recv_buf_t *rbuf, const char *channel, const exlcm_pose_t *msg, void *user)
{
    (void)rbuf;
    (void)user;
    printf("%s %lld %g\n", channel, (long long)msg->utime, msg->pos[0]);
    fflush(stdout);
    received++;
}

static int publish(lcm_t *lcm, const char *channel, int count, int period_ms)
{
    for (int i = 0; i < count; i++) {
        exlcm_pose_t pose;
        memset(&pose, 0, sizeof pose);
        pose.utime = i;
        pose.pos[0] = i;
        pose.pos[1] = 2;
        pose.pos[2] = 3;
        pose.orientation[0] = 1;
        if (exlcm_pose_t_publish(lcm, channel, &pose) != 0) {
            fprintf(stderr, "lcm_pose: publish %d failed\n", i);
            return 1;
        }
        sleep_ms(period_ms);
    }
    return 0;
}

static int subscribe(lcm_t *lcm, const char *channel, int count, int timeout_s)
{
    if (exlcm_pose_t_subscribe(lcm, channel, on_pose, NULL) == NULL) {
        fprintf(stderr, "lcm_pose: subscribe failed\n");
        return 1;
    }
    int fd = lcm_get_fileno(lcm);
    if (fd < 0) {
        fprintf(stderr, "lcm_pose: lcm_get_fileno failed\n");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    time_t end = time(NULL) + timeout_s;
    while (received < count && time(NULL) < end) {
        fd_set readable;
        FD_ZERO(&readable);
        FD_SET(fd, &readable);
        struct timeval wait = {0, 100 * 1000};
        int n = select(fd + 1, &readable, NULL, NULL, &wait);
        if (n < 0) {
            fprintf(stderr, "lcm_pose: select failed\n");
            return 1;
        }
        if (n > 0 && FD_ISSET(fd, &readable) && lcm_handle(lcm) != 0) {
            fprintf(stderr, "lcm_pose: lcm_handle failed\n");
            return 1;
        }
    }
    return received >= count ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 5 || (strcmp(argv[1], "pub") != 0 && strcmp(argv[1], "sub") != 0)) {
        fprintf(stderr, "usage: lcm_pose pub URL CHANNEL COUNT [PERIOD_MS] | sub URL CHANNEL COUNT [TIMEOUT_S]\n");
        return 2;
    }
    lcm_t *lcm = lcm_create(argv[2]);
    if (lcm == NULL) {
        fprintf(stderr, "lcm_pose: lcm_create(%s) failed\n", argv[2]);
        return 1;
    }
    int count = atoi(argv[4]);
    int rc = strcmp(argv[1], "pub") == 0 ? publish(lcm, argv[3], count, argc > 5 ? atoi(argv[5]) : 50)
                                          : subscribe(lcm, argv[3], count, argc > 5 ? atoi(argv[5]) : 20);
    lcm_destroy(lcm);
    return rc;
}
