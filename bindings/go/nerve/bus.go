// Package nerve is Go's way onto Nerve's bus and shared-memory channels, through libnerve's C ABI (nerve.h).
//
// A Bus publishes and subscribes on any URL Nerve understands (udpm:// as LCM, shm://, inproc://, memq://, ...):
//
//	bus, err := nerve.Open("udpm://239.255.76.67:7667?ttl=0")
//	defer bus.Close()
//	msgs, err := bus.Subscribe(ctx, "POSE|IMU.*") // closed when ctx is done or the bus is closed
//	err = bus.Publish("POSE", data)
//	for m := range msgs { ... m.Channel, m.Data ... }
//
// LCM's lcm-go shape is there too: New() (the default URL), SubscribeChan(channel, size) with a Subscription's
// ReceiveChan and Unsubscribe, and Destroy. Channels (CreateChannel, OpenChannel) are Nerve's shm channels
// themselves: a ring of frames in shared memory, put and got without a bus.
//
// Every method of a nil, closed or half-made value returns an error (ErrClosed), never crashes; a channel name or
// pattern with a NUL byte is ErrInvalid. A Bus may be used from many goroutines at once. Messages are copied out of
// libnerve's memory before they are handed over; a subscriber that falls behind loses its oldest messages (counted
// in Subscription.Dropped), so a slow reader never stalls the others.
//
// Building needs libnerve installed (scripts/install-c PREFIX) and PKG_CONFIG_PATH=PREFIX/lib/pkgconfig.
package nerve

/*
#cgo pkg-config: nerve
#include <stdlib.h>
#include <stdint.h>
#include <nerve/nerve.h>

int nerve_go_subscribe(nerve_bus *bus, const char *pattern, size_t capacity, uintptr_t handle,
                       nerve_subscription **out);
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

var (
	// ErrClosed is returned by every method of a closed (or nil) Bus, Subscription or Channel.
	ErrClosed = errors.New("nerve: closed")
	// ErrInvalid is returned for arguments libnerve would refuse or C cannot carry (a NUL inside a string).
	ErrInvalid = errors.New("nerve: invalid argument")
	// ErrTimeout is returned by Channel.Receive when nothing new came in time.
	ErrTimeout = errors.New("nerve: timed out")
)

// Error is a failure reported by libnerve: its status code and message.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return "nerve: " + e.Message }

// Is lets errors.Is match ErrInvalid for libnerve's NERVE_E_INVALID.
func (e *Error) Is(target error) bool {
	return target == ErrInvalid && e.Status == int(C.NERVE_E_INVALID)
}

func statusError(rc C.int) error {
	msg := C.GoString(C.nerve_last_error())
	if msg == "" {
		msg = C.GoString(C.nerve_status_string(rc))
	}
	return &Error{Status: int(rc), Message: msg}
}

func cString(s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, fmt.Errorf("%w: %q holds a NUL byte", ErrInvalid, s)
	}
	return C.CString(s), nil
}

// Message is one received message.
type Message struct {
	Channel string
	Data    []byte
	// RecvTime is when it arrived.
	RecvTime time.Time
}

// Bus is an open bus.
type Bus struct {
	mu     sync.Mutex
	c      *C.nerve_bus
	subs   map[*Subscription]struct{}
	stop   chan struct{}
	done   chan struct{}
	closed bool
	// poll: the dispatch goroutine spins on the bus instead of sleeping in it (SetPolling).
	poll atomic.Bool
}

// SetPolling makes the bus's receive goroutine spin on the bus (true), for the lowest latency at the price of a
// core, or sleep in it until a message comes (false, the default). A nil bus ignores it.
func (b *Bus) SetPolling(poll bool) {
	if b != nil {
		b.poll.Store(poll)
	}
}

// DefaultQueue is how many messages a subscription keeps for its reader before it drops the oldest.
const DefaultQueue = 1024

// Open opens a bus on url ("": NERVE_URL, then LCM_DEFAULT_URL, then LCM's default group).
func Open(url string) (*Bus, error) {
	curl, err := cString(url)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(curl))
	var c *C.nerve_bus
	if rc := C.nerve_bus_open(curl, &c); rc != C.NERVE_OK {
		return nil, statusError(rc)
	}
	b := &Bus{c: c, subs: map[*Subscription]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	go b.dispatch()
	return b, nil
}

// New opens a bus on the default URL, as lcm-go's lcm.New does.
func New() (*Bus, error) { return Open("") }

// dispatch runs libnerve's handlers, which hand each message to its subscription's Go channel.
func (b *Bus) dispatch() {
	defer close(b.done)
	for {
		select {
		case <-b.stop:
			return
		default:
		}
		timeout := C.int64_t(20 * time.Millisecond)
		if b.poll.Load() {
			timeout = 0
		}
		rc := C.nerve_bus_handle_timeout(b.c, timeout)
		if rc < 0 && rc != C.NERVE_E_IO {
			return
		}
		if timeout == 0 {
			// A spinning goroutine is preempted only every 10 ms: let the readers of its channels run.
			runtime.Gosched()
		}
	}
}

// Publish sends data on channel.
func (b *Bus) Publish(channel string, data []byte) error {
	if b == nil {
		return ErrClosed
	}
	cch, err := cString(channel)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cch))
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	// SAFETY of the pointer: libnerve copies the bytes before returning and keeps no reference.
	if rc := C.nerve_bus_publish(b.c, cch, p, C.size_t(len(data))); rc != C.NERVE_OK {
		return statusError(rc)
	}
	return nil
}

// Subscription is one subscription: messages on channels its pattern matches in full arrive on C.
type Subscription struct {
	// C (and ReceiveChan, lcm-go's name for the same channel's data) delivers the messages; it is closed by
	// Unsubscribe and by the bus's Close.
	C <-chan Message
	// ReceiveChan is set by SubscribeChan only: the data of each message, as lcm-go hands it over.
	ReceiveChan <-chan []byte

	bus     *Bus
	c       *C.nerve_subscription
	id      uintptr
	mu      sync.Mutex
	ch      chan Message
	raw     chan []byte
	closed  bool
	dropped uint64
	// queueDropped: libnerve's dropped count for this subscription, as last read.
	queueDropped uint64
}

// live maps the id libnerve hands goNerveHandler to its Subscription, until the subscription ends. Not cgo.Handle:
// libnerve may still run a handler for a message it had in hand when Unsubscribe returned, and an ended
// cgo.Handle's Value panics; an id that is gone is a message dropped. Ids are never reused.
var (
	live   sync.Map
	nextID atomic.Uint64
)

func (b *Bus) subscribe(pattern string, size int, raw bool) (*Subscription, error) {
	if b == nil {
		return nil, ErrClosed
	}
	if size <= 0 {
		size = DefaultQueue
	}
	cpat, err := cString(pattern)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cpat))
	s := &Subscription{bus: b}
	if raw {
		s.raw = make(chan []byte, size)
		s.ReceiveChan = s.raw
	} else {
		s.ch = make(chan Message, size)
		s.C = s.ch
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	s.id = uintptr(nextID.Add(1))
	live.Store(s.id, s)
	if rc := C.nerve_go_subscribe(b.c, cpat, C.size_t(size), C.uintptr_t(s.id), &s.c); rc != C.NERVE_OK {
		live.Delete(s.id)
		return nil, statusError(rc)
	}
	b.subs[s] = struct{}{}
	return s, nil
}

// Subscribe delivers every message on a channel that pattern (a regular expression) matches in full, until ctx is
// done or the bus is closed; then the returned channel is closed.
func (b *Bus) Subscribe(ctx context.Context, pattern string) (<-chan Message, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrInvalid)
	}
	s, err := b.subscribe(pattern, DefaultQueue, false)
	if err != nil {
		return nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Unsubscribe()
		case <-b.done:
		}
	}()
	return s.C, nil
}

// SubscribeMessages is Subscribe with a Subscription to end by hand and a queue of size messages (0: DefaultQueue).
func (b *Bus) SubscribeMessages(pattern string, size int) (*Subscription, error) {
	return b.subscribe(pattern, size, false)
}

// SubscribeChan is lcm-go's Subscribe(channel, size): each message's data on the Subscription's ReceiveChan.
func (b *Bus) SubscribeChan(pattern string, size int) (*Subscription, error) {
	return b.subscribe(pattern, size, true)
}

//export goNerveHandler
func goNerveHandler(msg *C.nerve_received, handle C.uintptr_t) {
	v, ok := live.Load(uintptr(handle))
	if !ok {
		return // ended while this message was on its way (a cgo.Handle would panic here)
	}
	s := v.(*Subscription)
	data := C.GoBytes(msg.data, C.int(msg.len))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.raw != nil {
		for {
			select {
			case s.raw <- data:
				return
			default:
			}
			select {
			case <-s.raw:
				s.dropped++
			default:
			}
		}
	}
	m := Message{
		Channel:  C.GoString(msg.channel),
		Data:     data,
		RecvTime: time.UnixMicro(int64(msg.recv_utime)),
	}
	for {
		select {
		case s.ch <- m:
			return
		default:
		}
		select {
		case <-s.ch:
			s.dropped++
		default:
		}
	}
}

// Dropped is how many messages this subscription lost because its reader fell behind: from its channel, and from
// libnerve's queue in front of it (when messages come faster than the bus's goroutine hands them over).
func (s *Subscription) Dropped() uint64 {
	if s == nil {
		return 0
	}
	if b := s.bus; b != nil {
		b.mu.Lock()
		if _, ok := b.subs[s]; ok && !b.closed {
			s.saveQueueDrops()
		}
		b.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped + s.queueDropped
}

// saveQueueDrops reads libnerve's count of messages its queue dropped; under the bus's lock, while s.c is live.
func (s *Subscription) saveQueueDrops() {
	var st C.nerve_subscription_stats
	if C.nerve_subscription_stats_get(s.c, &st) == C.NERVE_OK {
		s.mu.Lock()
		s.queueDropped = uint64(st.dropped)
		s.mu.Unlock()
	}
}

// Unsubscribe ends the subscription and closes its channel; a second call is ErrClosed.
func (s *Subscription) Unsubscribe() error {
	if s == nil || s.bus == nil {
		return ErrClosed
	}
	b := s.bus
	b.mu.Lock()
	_, live := b.subs[s]
	var rc C.int = C.NERVE_OK
	if live {
		delete(b.subs, s)
		if !b.closed {
			s.saveQueueDrops()
			rc = C.nerve_bus_unsubscribe(b.c, s.c)
		}
	}
	b.mu.Unlock()
	if !live {
		return ErrClosed
	}
	s.finish()
	if rc != C.NERVE_OK {
		return statusError(rc)
	}
	return nil
}

func (s *Subscription) finish() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		if s.ch != nil {
			close(s.ch)
		}
		if s.raw != nil {
			close(s.raw)
		}
	}
	s.mu.Unlock()
	live.Delete(s.id)
}

// Close ends every subscription (closing their channels) and closes the bus; a second call is ErrClosed.
func (b *Bus) Close() error {
	if b == nil {
		return ErrClosed
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.closed = true
	close(b.stop)
	b.mu.Unlock()
	<-b.done
	b.mu.Lock()
	subs := b.subs
	b.subs = map[*Subscription]struct{}{}
	for s := range subs {
		s.saveQueueDrops()
	}
	rc := C.nerve_bus_close(b.c)
	b.c = nil
	b.mu.Unlock()
	for s := range subs {
		s.finish()
	}
	if rc != C.NERVE_OK {
		return statusError(rc)
	}
	return nil
}

// Destroy is Close, under lcm-go's name.
func (b *Bus) Destroy() error { return b.Close() }
