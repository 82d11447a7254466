// The C side of the bus's callbacks: libnerve calls goNerveHandler (exported by bus.go) with the subscription's
// cgo.Handle as its user pointer.
#include <stdint.h>
#include <nerve/nerve.h>

extern void goNerveHandler(nerve_received *msg, uintptr_t handle);

static void nerve_go_trampoline(const nerve_received *msg, void *user)
{
    goNerveHandler((nerve_received *) msg, (uintptr_t) user);
}

int nerve_go_subscribe(nerve_bus *bus, const char *pattern, size_t capacity, uintptr_t handle,
                       nerve_subscription **out)
{
    return nerve_bus_subscribe(bus, pattern, capacity, NERVE_DROP_OLDEST, nerve_go_trampoline, (void *) handle, out);
}
