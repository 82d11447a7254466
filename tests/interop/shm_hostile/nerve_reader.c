/* A hostile-test reader over libnerve's channel API (nerve.h): see reader.h. */
#include <nerve/nerve.h>

#include "reader.h"

static nerve_channel *channels[MAX_CHANNELS];

static int reader_open(int ch, const char *dir)
{
    char name[32];
    snprintf(name, sizeof name, "hostile%d", ch);
    return nerve_channel_open(name, dir, NERVE_START_OLDEST, &channels[ch]) == NERVE_OK ? 0 : -1;
}

static int reader_get(int ch, void *buf, size_t cap, size_t *len)
{
    nerve_message_info info;
    int s = nerve_channel_get(channels[ch], buf, cap, NERVE_READ_NEXT, 3000000, &info);
    if (s == NERVE_OK) {
        *len = (size_t)info.len;
        return GOT_MESSAGE;
    }
    if (s == NERVE_NOTHING_NEW || s == NERVE_TIMED_OUT) return GOT_NOTHING;
    /* An error (a damaged handle says to reopen the channel), or a message longer than any the writer puts. */
    return GOT_ERROR;
}

static void reader_close(int ch)
{
    nerve_channel_close(channels[ch]);
    channels[ch] = NULL;
}

int main(int argc, char **argv)
{
    return run_reader(argc, argv);
}
