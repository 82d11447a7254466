/* A C LCM program in the style of LCM's listener.c / send_message.c, over C generated from example_t.lcm. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lcm/lcm.h>

#include "exlcm_example_t.h"

static void on_example(const lcm_recv_buf_t *rbuf, const char *channel, const exlcm_example_t *msg, void *user)
{
    int i;
    (void) rbuf;
    (*(int *) user)++;
    printf("C %s: ts=%" PRId64 " pos=(%g,%g,%g) ranges=[", channel, msg->timestamp, msg->position[0],
           msg->position[1], msg->position[2]);
    for (i = 0; i < msg->num_ranges; i++)
        printf("%s%d", i ? "," : "", msg->ranges[i]);
    printf("] name='%s' enabled=%d\n", msg->name, msg->enabled);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    lcm_t *lcm;
    int n, count = 0, tries = 0, i;
    if (argc < 4)
        return 2;
    n = atoi(argv[3]);
    lcm = lcm_create(argv[2]);
    if (!lcm)
        return 1;
    if (!strcmp(argv[1], "listen")) {
        exlcm_example_t_subscription_t *sub = exlcm_example_t_subscribe(lcm, "EXAMPLE", &on_example, &count);
        while (count < n && tries++ < 100)
            lcm_handle_timeout(lcm, 100);
        exlcm_example_t_unsubscribe(lcm, sub);
    } else {
        struct timespec pause = {0, 300000000L};
        int16_t ranges[4] = {1, 2, 3, 4};
        exlcm_example_t msg;
        nanosleep(&pause, NULL);
        for (i = 0; i < n; i++) {
            memset(&msg, 0, sizeof(msg));
            msg.timestamp = i;
            msg.position[0] = i;
            msg.num_ranges = i % 5;
            msg.ranges = ranges;
            msg.name = (char *) "from C";
            msg.enabled = 1;
            exlcm_example_t_publish(lcm, "EXAMPLE", &msg);
            pause.tv_nsec = 20000000L;
            nanosleep(&pause, NULL);
        }
        count = n;
    }
    lcm_destroy(lcm);
    return count == n ? 0 : 1;
}
