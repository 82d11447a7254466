// The Go roles of the latency suite (bench/README.md): python/roles.py's lat-recv and lat-send, with the same
// arguments and output lines, on Nerve's Go package (bindings/go, cgo over libnerve).
//
//	goroles [-poll] lat-recv URL CHANNEL COUNT MAX_MS
//	goroles [-poll] lat-send URL CHANNEL COUNT HZ SIZE
//
// A message's bytes 8..16 are the sender's CLOCK_MONOTONIC stamp (little-endian ns), taken just before it publishes;
// the receiver reads the clock first thing once a message comes off its subscription's channel, so a figure is Go
// publish to Go handler. A message shorter than 16 bytes ends a run. -poll: the receiver's bus goroutine spins on
// the bus (Bus.SetPolling) instead of sleeping in it.
package main

/*
#include <time.h>
static unsigned long long mono_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}
*/
import "C"

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nerve-robotics/nerve/bindings/go/nerve"
)

// monoNs is CLOCK_MONOTONIC, the clock every role stamps with (Go's own monotonic clock has no absolute value).
func monoNs() uint64 { return uint64(C.mono_ns()) }

func sleepUntil(t uint64) {
	for {
		now := monoNs()
		if now >= t {
			return
		}
		time.Sleep(time.Duration(t - now))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "goroles:", err)
	os.Exit(3)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail(err)
	}
	return n
}

func open(url string, poll bool) *nerve.Bus {
	bus, err := nerve.Open(url)
	if err != nil {
		fail(err)
	}
	bus.SetPolling(poll)
	return bus
}

func latRecv(url, channel string, count, maxMs int, poll bool) {
	bus := open(url, poll)
	defer bus.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(maxMs)*time.Millisecond)
	defer cancel()
	msgs, err := bus.Subscribe(ctx, channel)
	if err != nil {
		fail(err)
	}
	fmt.Println("ready")
	lat := make([]uint64, 0, count)
loop:
	for len(lat) < count {
		select {
		case m, ok := <-msgs:
			now := monoNs()
			if !ok || len(m.Data) < 16 {
				break loop
			}
			lat = append(lat, now-binary.LittleEndian.Uint64(m.Data[8:16]))
		case <-ctx.Done():
			break loop
		}
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "recv %d\n", len(lat))
	for _, x := range lat {
		fmt.Fprintf(w, "lat %d\n", x)
	}
	fmt.Fprintln(w, "end")
	w.Flush()
}

func latSend(url, channel string, count int, hz float64, size int) {
	// Never polling: the sender subscribes to nothing, and a bus spinning beside it measured 2 ms slower.
	bus := open(url, false)
	defer bus.Close()
	if size < 16 {
		size = 16
	}
	msg := make([]byte, size)
	period := uint64(1e9 / hz)
	t := monoNs() + period
	for i := 0; i < count; i++ {
		sleepUntil(t)
		binary.LittleEndian.PutUint64(msg[0:8], uint64(i))
		binary.LittleEndian.PutUint64(msg[8:16], monoNs())
		if err := bus.Publish(channel, msg); err != nil {
			fail(err)
		}
		t += period
	}
	for i := 0; i < 3; i++ {
		sleepUntil(monoNs() + 5_000_000)
		_ = bus.Publish(channel, make([]byte, 8))
	}
	fmt.Printf("sent %d\n", count)
}

func main() {
	poll := flag.Bool("poll", false, "spin on the bus instead of sleeping in it")
	flag.Parse()
	a := flag.Args()
	switch {
	case len(a) == 5 && a[0] == "lat-recv":
		latRecv(a[1], a[2], atoi(a[3]), atoi(a[4]), *poll)
	case len(a) == 6 && a[0] == "lat-send":
		hz, err := strconv.ParseFloat(a[4], 64)
		if err != nil {
			fail(err)
		}
		latSend(a[1], a[2], atoi(a[3]), hz, atoi(a[5]))
	default:
		fail(fmt.Errorf("unknown role or arguments: %v", a))
	}
}
