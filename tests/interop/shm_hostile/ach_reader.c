/* A hostile-test reader over libach (Ach's ach.h; channels in $NERVE_SHM_DIR): see reader.h. */
#include <ach.h>

#include "reader.h"

static ach_channel_t channels[MAX_CHANNELS];

static int reader_open(int ch, const char *dir)
{
    (void)dir; /* libach takes the directory from $NERVE_SHM_DIR. */
    char name[32];
    snprintf(name, sizeof name, "hostile%d", ch);
    return ach_open(&channels[ch], name, NULL) == ACH_OK ? 0 : -1;
}

static int reader_get(int ch, void *buf, size_t cap, size_t *len)
{
    struct timespec wait = {0, 3000000};
    enum ach_status s = ach_get(&channels[ch], buf, cap, len, &wait, ACH_O_WAIT | ACH_O_RELTIME);
    if (s == ACH_OK || s == ACH_MISSED_FRAME) return GOT_MESSAGE;
    if (s == ACH_TIMEOUT || s == ACH_EAGAIN) return GOT_NOTHING;
    return GOT_ERROR;
}

static void reader_close(int ch)
{
    ach_close(&channels[ch]);
}

int main(int argc, char **argv)
{
    return run_reader(argc, argv);
}
