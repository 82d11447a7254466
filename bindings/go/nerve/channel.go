package nerve

/*
#include <stdlib.h>
#include <nerve/nerve.h>
*/
import "C"

import (
	"sync"
	"time"
	"unsafe"
)

// Start is where a new Channel handle starts reading.
type Start int

const (
	// StartNewest: the newest message now in the channel comes first (a late joiner sees the state).
	StartNewest Start = C.NERVE_START_NEWEST
	// StartOldest: the oldest message the channel still holds comes first.
	StartOldest Start = C.NERVE_START_OLDEST
	// StartNext: only messages put after the handle was opened.
	StartNext Start = C.NERVE_START_NEXT
)

// Channel is a handle on a shared-memory channel: a ring of frames that any process on the machine can put to and
// get from, with no bus in between.
type Channel struct {
	mu  sync.Mutex
	c   *C.nerve_channel
	buf []byte
}

// ChannelInfo is what came with a received message.
type ChannelInfo struct {
	Seq     uint64
	Missed  uint64
	PutTime time.Time
}

func cDir(dir string) (*C.char, error) {
	if dir == "" {
		return nil, nil
	}
	return cString(dir)
}

// CreateChannel makes (or opens, if it exists with these sizes) the channel name of frames messages of at most
// frameSize bytes in dir ("": Nerve's default directory), readable and writable by this user.
func CreateChannel(name string, frames, frameSize uint64, dir string) (*Channel, error) {
	cname, err := cString(name)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cname))
	cdir, err := cDir(dir)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cdir))
	var c *C.nerve_channel
	if rc := C.nerve_channel_create(cname, C.uint64_t(frames), C.uint64_t(frameSize), 0o600, cdir,
		C.NERVE_CREATE_OR_OPEN, &c); rc != C.NERVE_OK {
		return nil, statusError(rc)
	}
	return &Channel{c: c}, nil
}

// OpenChannel opens an existing channel.
func OpenChannel(name, dir string, start Start) (*Channel, error) {
	cname, err := cString(name)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cname))
	cdir, err := cDir(dir)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cdir))
	var c *C.nerve_channel
	if rc := C.nerve_channel_open(cname, cdir, C.int(start), &c); rc != C.NERVE_OK {
		return nil, statusError(rc)
	}
	return &Channel{c: c}, nil
}

// RemoveChannel deletes a channel's file (handles open on it keep working).
func RemoveChannel(name, dir string) error {
	cname, err := cString(name)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cname))
	cdir, err := cDir(dir)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cdir))
	if rc := C.nerve_channel_remove(cname, cdir); rc != C.NERVE_OK {
		return statusError(rc)
	}
	return nil
}

// Put writes one message and returns its sequence number.
func (ch *Channel) Put(data []byte) (uint64, error) {
	if ch == nil {
		return 0, ErrClosed
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.c == nil {
		return 0, ErrClosed
	}
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	var seq C.uint64_t
	if rc := C.nerve_channel_put(ch.c, p, C.size_t(len(data)), &seq); rc != C.NERVE_OK {
		return 0, statusError(rc)
	}
	return uint64(seq), nil
}

// Receive returns the next message this handle has not seen (newest: the newest one, skipping older unseen ones),
// waiting at most timeout (0: not at all; < 0: forever); ErrTimeout when none came.
func (ch *Channel) Receive(newest bool, timeout time.Duration) ([]byte, ChannelInfo, error) {
	if ch == nil {
		return nil, ChannelInfo{}, ErrClosed
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.c == nil {
		return nil, ChannelInfo{}, ErrClosed
	}
	mode := C.int(C.NERVE_READ_NEXT)
	if newest {
		mode = C.NERVE_READ_NEWEST
	}
	if len(ch.buf) == 0 {
		var frames, frameSize C.uint64_t
		if rc := C.nerve_channel_sizes(ch.c, &frames, &frameSize); rc != C.NERVE_OK {
			return nil, ChannelInfo{}, statusError(rc)
		}
		ch.buf = make([]byte, max(int(frameSize), 1))
	}
	var info C.nerve_message_info
	rc := C.nerve_channel_get(ch.c, unsafe.Pointer(&ch.buf[0]), C.size_t(len(ch.buf)), mode, C.int64_t(timeout),
		&info)
	switch rc {
	case C.NERVE_OK:
	case C.NERVE_NOTHING_NEW, C.NERVE_TIMED_OUT:
		return nil, ChannelInfo{}, ErrTimeout
	default:
		return nil, ChannelInfo{}, statusError(rc)
	}
	out := append([]byte(nil), ch.buf[:info.len]...)
	return out, ChannelInfo{Seq: uint64(info.seq), Missed: uint64(info.missed),
		PutTime: time.UnixMicro(int64(info.put_utime))}, nil
}

// Close closes the handle; a second call is ErrClosed.
func (ch *Channel) Close() error {
	if ch == nil {
		return ErrClosed
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.c == nil {
		return ErrClosed
	}
	rc := C.nerve_channel_close(ch.c)
	ch.c = nil
	if rc != C.NERVE_OK {
		return statusError(rc)
	}
	return nil
}
