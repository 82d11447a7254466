package nerve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// The peers: the repository's Python (with the real lcm module and Nerve's nerve module) and the nerve CLI.
func peer(t *testing.T, env, rel string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		p, _ = filepath.Abs(filepath.Join("..", "..", "..", rel))
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v (set %s)", p, err, env)
	}
	return p
}

func udpmURL(offset int) string {
	return fmt.Sprintf("udpm://239.255.76.91:%d?ttl=0", 46000+(os.Getpid()%400)*10+offset)
}

func TestBadInputIsAnErrorNotACrash(t *testing.T) {
	var nilBus *Bus
	if nilBus.Publish("X", nil) != ErrClosed || nilBus.Close() != ErrClosed {
		t.Fatal("nil bus")
	}
	if _, err := nilBus.Subscribe(context.Background(), "X"); err != ErrClosed {
		t.Fatal("nil bus subscribe", err)
	}
	if _, err := Open("nosuch://"); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatal("unknown provider:", err)
	}
	if _, err := Open("memq://\x00"); !errors.Is(err, ErrInvalid) {
		t.Fatal("NUL in URL:", err)
	}
	bus, err := Open("memq://")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Subscribe(context.Background(), "X("); !errors.Is(err, ErrInvalid) {
		t.Fatal("bad pattern:", err)
	}
	//lint:ignore SA1012 a nil context must be refused, not crash
	if _, err := bus.Subscribe(nil, "X"); !errors.Is(err, ErrInvalid) { //nolint:staticcheck
		t.Fatal("nil context:", err)
	}
	if err := bus.Publish("A\x00B", []byte{1}); !errors.Is(err, ErrInvalid) {
		t.Fatal("NUL in channel:", err)
	}
	sub, err := bus.SubscribeMessages("X", 0)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Unsubscribe() != nil || sub.Unsubscribe() != ErrClosed {
		t.Fatal("unsubscribe twice")
	}
	if _, ok := <-sub.C; ok {
		t.Fatal("channel of an ended subscription still open")
	}
	live, _ := bus.SubscribeMessages("Y", 0)
	if bus.Close() != nil || bus.Close() != ErrClosed || bus.Destroy() != ErrClosed {
		t.Fatal("close twice")
	}
	if _, ok := <-live.C; ok {
		t.Fatal("Close left a subscription's channel open")
	}
	if live.Unsubscribe() != ErrClosed || bus.Publish("X", nil) != ErrClosed {
		t.Fatal("use after close")
	}
	if _, err := bus.SubscribeChan("X", 1); err != ErrClosed {
		t.Fatal("subscribe after close", err)
	}
	var nilSub *Subscription
	if nilSub.Unsubscribe() != ErrClosed || nilSub.Dropped() != 0 {
		t.Fatal("nil subscription")
	}
	var nilCh *Channel
	if _, err := nilCh.Put(nil); err != ErrClosed || nilCh.Close() != ErrClosed {
		t.Fatal("nil channel")
	}
	if _, err := OpenChannel("no-such-channel", t.TempDir(), StartOldest); err == nil {
		t.Fatal("opened a channel that does not exist")
	}
	if _, err := CreateChannel("bad", 1, 0, t.TempDir()); err == nil {
		t.Fatal("created a channel of one zero-byte frame")
	}
}

func TestPublishSubscribeInProcess(t *testing.T) {
	bus, err := Open("memq://")
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	ctx, cancel := context.WithCancel(context.Background())
	msgs, err := bus.Subscribe(ctx, "POSE|IMU.*")
	if err != nil {
		t.Fatal(err)
	}
	lcmStyle, err := bus.SubscribeChan("POSE", 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{"POSE", "IMU_1", "OTHER"} {
		if err := bus.Publish(ch, []byte(ch)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"POSE", "IMU_1"} {
		select {
		case m := <-msgs:
			if m.Channel != want || string(m.Data) != want || m.RecvTime.IsZero() {
				t.Fatalf("got %+v, want %s", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("nothing received")
		}
	}
	if data := <-lcmStyle.ReceiveChan; string(data) != "POSE" {
		t.Fatalf("ReceiveChan: %q", data)
	}
	cancel()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return
			}
			t.Fatalf("unexpected %+v", m)
		case <-deadline:
			t.Fatal("cancelling the context did not close the channel")
		}
	}
}

func TestSlowReaderLosesOldestMessages(t *testing.T) {
	bus, err := Open("memq://")
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	sub, err := bus.SubscribeMessages("Q", 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		_ = bus.Publish("Q", []byte{byte(i)})
	}
	deadline := time.Now().Add(5 * time.Second)
	for sub.Dropped() < 8 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if a, b := <-sub.C, <-sub.C; a.Data[0] != 8 || b.Data[0] != 9 || sub.Dropped() != 8 {
		t.Fatalf("kept %d and %d, dropped %d", a.Data[0], b.Data[0], sub.Dropped())
	}
}

func TestShmChannelPutAndReceive(t *testing.T) {
	dir := t.TempDir()
	w, err := CreateChannel("go-chan", 8, 256, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := OpenChannel("go-chan", dir, StartNext)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Receive(false, 0); err != ErrTimeout {
		t.Fatal("empty channel:", err)
	}
	seq, err := w.Put([]byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	data, info, err := r.Receive(false, time.Second)
	if err != nil || string(data) != "hello" || info.Seq != seq {
		t.Fatalf("%q %+v %v", data, info, err)
	}
	if _, err := w.Put(make([]byte, 257)); err == nil {
		t.Fatal("a message longer than a frame was put")
	}
	if r.Close() != nil || r.Close() != ErrClosed {
		t.Fatal("close twice")
	}
	if _, _, err := r.Receive(false, 0); err != ErrClosed {
		t.Fatal("receive after close:", err)
	}
	if err := RemoveChannel("go-chan", dir); err != nil {
		t.Fatal(err)
	}
}

// publishUntil publishes data on channel every 50 ms until the peer prints a line (its first), and returns it.
func publishUntil(t *testing.T, bus *Bus, channel string, data []byte, peer *exec.Cmd) string {
	t.Helper()
	out, err := peer.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	peer.Stderr = &stderr
	if err := peer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = peer.Process.Kill(); _ = peer.Wait() }()
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("%s exited without a line: %s", peer.Path, stderr.String())
			}
			return line
		case <-tick.C:
			if err := bus.Publish(channel, data); err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatalf("%s heard nothing in 20 s: %s", peer.Path, stderr.String())
		}
	}
}

const pySubscriber = `
import sys
url, channel, which = sys.argv[1:4]
if which == "lcm":
    import lcm
    bus = lcm.LCM(url)
else:
    import nerve
    bus = nerve.Bus(url)
got = []
bus.subscribe(channel, lambda ch, data: got.append(bytes(data)))
for _ in range(400):
    bus.handle_timeout(50)
    if got:
        print(got[0].hex(), flush=True)
        break
`

func TestGoPublisherHeardByRealLCMAndPythonNerveOverUdpm(t *testing.T) {
	python := peer(t, "NERVE_TEST_PYTHON", ".venv/bin/python")
	url := udpmURL(1)
	bus, err := Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	data := []byte("from go \x00\xff")
	for _, which := range []string{"lcm", "nerve"} {
		line := publishUntil(t, bus, "GO_UDPM", data, exec.Command(python, "-c", pySubscriber, url, "GO_UDPM", which))
		if line != hex.EncodeToString(data) {
			t.Fatalf("%s heard %s", which, line)
		}
	}
}

func TestRealLCMPublisherHeardByGoOverUdpm(t *testing.T) {
	python := peer(t, "NERVE_TEST_PYTHON", ".venv/bin/python")
	url := udpmURL(2)
	bus, err := Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msgs, err := bus.Subscribe(ctx, "LCM_TO_GO")
	if err != nil {
		t.Fatal(err)
	}
	pub := exec.CommandContext(ctx, python, "-c",
		"import lcm, sys, time\nlc = lcm.LCM(sys.argv[1])\nfor _ in range(400):\n    lc.publish('LCM_TO_GO', b'lcm')\n    time.sleep(0.05)\n", url)
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pub.Process.Kill(); _ = pub.Wait() }()
	m, ok := <-msgs
	if !ok || m.Channel != "LCM_TO_GO" || string(m.Data) != "lcm" {
		t.Fatalf("got %+v (ok %v)", m, ok)
	}
}

func TestGoAndRustAndPythonOverShm(t *testing.T) {
	python := peer(t, "NERVE_TEST_PYTHON", ".venv/bin/python")
	nerveBin := peer(t, "NERVE_BIN", "target/debug/nerve")
	url := "shm://?dir=" + t.TempDir()
	bus, err := Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	data := []byte{0xde, 0xad, 0xbe, 0xef}
	// Go to Python.
	if line := publishUntil(t, bus, "GO_SHM", data, exec.Command(python, "-c", pySubscriber, url, "GO_SHM",
		"nerve")); line != "deadbeef" {
		t.Fatalf("python heard %s", line)
	}
	// Go to Rust.
	rust := exec.Command(nerveBin, "sub", "GO_SHM_RUST", "--url", url, "--count", "1", "--timeout-ms", "20000",
		"--json")
	if line := publishUntil(t, bus, "GO_SHM_RUST", data, rust); !strings.Contains(line, `"deadbeef"`) {
		t.Fatalf("nerve sub printed %s", line)
	}
	// Rust to Go.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msgs, err := bus.Subscribe(ctx, "RUST_SHM")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if err := exec.Command(nerveBin, "pub", "RUST_SHM", "--url", url, "--hex", "01 02").Run(); err != nil {
			t.Fatal(err)
		}
		select {
		case m, ok := <-msgs:
			if !ok || !bytes.Equal(m.Data, []byte{1, 2}) {
				t.Fatalf("got %+v (ok %v)", m, ok)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// BenchmarkPublishToChannelShm is one publish on a shm:// bus to its arrival on a Go subscriber's channel, in one
// process (go test -bench . -run ^$).
func BenchmarkPublishToChannelShm(b *testing.B) {
	bus, err := Open("shm://?dir=" + b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	sub, err := bus.SubscribeMessages("LAT", 4)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 64)
	// The first message also makes the channel: not timed.
	_ = bus.Publish("LAT", data)
	<-sub.C
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := bus.Publish("LAT", data); err != nil {
			b.Fatal(err)
		}
		<-sub.C
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
}

// A message libnerve already had in hand when Unsubscribe (or the end of a context) returned reaches a subscription
// that is gone: it is dropped, not a panic of the bus's goroutine.
func TestUnsubscribeWhileMessagesArriveIsNoPanic(t *testing.T) {
	bus, err := Open("memq://")
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	for i := 0; i < 300; i++ {
		sub, err := bus.SubscribeMessages("R", 4)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 20; j++ {
			_ = bus.Publish("R", []byte{byte(j)})
		}
		if err := sub.Unsubscribe(); err != nil {
			t.Fatal(err)
		}
	}
}
