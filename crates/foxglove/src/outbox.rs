//! Each client's newest-wins queue, between the SDK's output for that client and the client's socket, and the
//! table of connected clients with what was sent to and dropped for each.
//!
//! The SDK keeps a bounded queue per client too, but it drops from it without telling anyone (its `send_lossy`
//! result is discarded). The front reads the SDK's loopback socket for a client as fast as it comes, splits it into
//! WebSocket frames (tungstenite's frame-header parser) and queues them here; a task writes the queue to the client.
//! A client that does not keep up therefore fills this queue, not the SDK's, and the drops happen here, counted:
//! only message-data frames (binary, opcode 1) are ever dropped, the oldest first, and never the newest one;
//! control frames (advertisements, statuses, anything in text) always go through, in order.

use std::collections::VecDeque;
use std::io::Cursor;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use tungstenite::protocol::frame::coding::{Data, OpCode};
use tungstenite::protocol::frame::FrameHeader;

/// What the front has done for one connected client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientStats {
    /// The connection's number on this server (from 1, in order of connection).
    pub id: u64,
    /// The client's address.
    pub peer: SocketAddr,
    /// Messages (message-data frames) written to the client's socket.
    pub sent: u64,
    /// Messages dropped because the client did not keep up (its oldest went first).
    pub dropped: u64,
    /// Messages waiting in its queue now.
    pub queued: u64,
}

/// How much a client's queue holds before it drops that client's oldest messages (whichever bound comes first).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) messages: usize,
    pub(crate) bytes: usize,
}

/// The largest frame the front takes from the SDK (far above any LCM message's JSON; a bound, not a figure).
const MAX_FRAME: u64 = 1 << 31;

/// The connected clients, and the drops of those gone.
#[derive(Default)]
pub(crate) struct Clients {
    inner: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    live: Vec<Arc<Outbox>>,
    gone_dropped: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The data under these locks is counters and queued frames, valid whatever a panicking holder did.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Clients {
    /// Registers a client; it stays listed until the returned guard is dropped.
    pub(crate) fn register(self: &Arc<Self>, peer: SocketAddr, limits: Limits) -> Registration {
        let mut table = lock(&self.inner);
        table.next_id += 1;
        let outbox = Arc::new(Outbox {
            id: table.next_id,
            peer,
            limits,
            state: Mutex::new(Queue::default()),
            ready: Notify::new(),
        });
        table.live.push(Arc::clone(&outbox));
        Registration { clients: Arc::clone(self), outbox }
    }

    /// The clients connected now, in order of connection.
    pub(crate) fn stats(&self) -> Vec<ClientStats> {
        lock(&self.inner).live.iter().map(|o| o.stats()).collect()
    }

    /// Messages dropped for slow clients, all clients so far (connected or gone).
    pub(crate) fn total_dropped(&self) -> u64 {
        let table = lock(&self.inner);
        table.gone_dropped + table.live.iter().map(|o| lock(&o.state).dropped).sum::<u64>()
    }
}

/// A client's place in [`Clients`]; unlists it when dropped (however the connection ends).
pub(crate) struct Registration {
    clients: Arc<Clients>,
    pub(crate) outbox: Arc<Outbox>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut table = lock(&self.clients.inner);
        table.live.retain(|o| !Arc::ptr_eq(o, &self.outbox));
        table.gone_dropped += lock(&self.outbox.state).dropped;
    }
}

/// One frame as it goes on the wire, header included.
struct Frame {
    bytes: Vec<u8>,
    /// A message-data frame (the only kind ever dropped).
    data: bool,
}

#[derive(Default)]
struct Queue {
    frames: VecDeque<Frame>,
    data_frames: usize,
    data_bytes: usize,
    sent: u64,
    dropped: u64,
    closed: bool,
}

/// One client's queue.
pub(crate) struct Outbox {
    id: u64,
    peer: SocketAddr,
    limits: Limits,
    state: Mutex<Queue>,
    ready: Notify,
}

impl Outbox {
    fn stats(&self) -> ClientStats {
        let q = lock(&self.state);
        ClientStats { id: self.id, peer: self.peer, sent: q.sent, dropped: q.dropped, queued: q.data_frames as u64 }
    }

    /// Queues a frame, dropping the oldest message-data frames while the queue is over either bound.
    fn push(&self, frame: Frame) {
        let mut q = lock(&self.state);
        if frame.data {
            q.data_frames += 1;
            q.data_bytes += frame.bytes.len();
        }
        q.frames.push_back(frame);
        while q.data_frames > 1 && (q.data_frames > self.limits.messages || q.data_bytes > self.limits.bytes) {
            let Some(oldest) = q.frames.iter().position(|f| f.data) else { break };
            let gone = q.frames.remove(oldest).expect("position is in the queue");
            q.data_frames -= 1;
            q.data_bytes -= gone.bytes.len();
            q.dropped += 1;
        }
        drop(q);
        self.ready.notify_one();
    }

    /// No more frames will come (the SDK closed); what is queued still goes out.
    fn close(&self) {
        lock(&self.state).closed = true;
        self.ready.notify_one();
    }

    /// The next frame, waiting for one; `None` once closed and empty.
    async fn pop(&self) -> Option<Frame> {
        loop {
            {
                let mut q = lock(&self.state);
                if let Some(frame) = q.frames.pop_front() {
                    if frame.data {
                        q.data_frames -= 1;
                        q.data_bytes -= frame.bytes.len();
                        q.sent += 1;
                    }
                    return Some(frame);
                }
                if q.closed {
                    return None;
                }
            }
            // `notify_one` keeps a permit when nobody waits, so a push between the check and here is not missed.
            self.ready.notified().await;
        }
    }

    /// Reads the SDK's frames for this client from `from_sdk` (`pending`: bytes already read) into the queue, until
    /// the SDK closes or sends what is not a WebSocket frame. `before_read` runs before every read (the front acks
    /// the SDK's data at once with it).
    pub(crate) async fn fill<R: AsyncRead + Unpin>(
        &self,
        from_sdk: &mut R,
        mut pending: Vec<u8>,
        mut before_read: impl FnMut(&R),
    ) {
        'reading: loop {
            let mut start = 0;
            loop {
                let mut cursor = Cursor::new(&pending[start..]);
                let (header, len) = match FrameHeader::parse(&mut cursor) {
                    Ok(Some(parsed)) => parsed,
                    Ok(None) => break,
                    Err(_) => break 'reading,
                };
                if len > MAX_FRAME {
                    break 'reading;
                }
                let header_len = cursor.position() as usize;
                let total = header_len + len as usize;
                let have = pending.len() - start;
                if have < total {
                    // No room is reserved for the whole frame up front: a header may claim up to MAX_FRAME, and
                    // the buffer grows (doubling) only as the bytes arrive.
                    break;
                }
                let bytes = pending[start..start + total].to_vec();
                let data = header.is_final
                    && header.opcode == OpCode::Data(Data::Binary)
                    && bytes.get(header_len) == Some(&MESSAGE_DATA);
                self.push(Frame { bytes, data });
                start += total;
            }
            pending.drain(..start);
            if pending.capacity() - pending.len() < 16 * 1024 {
                pending.reserve(64 * 1024);
            }
            before_read(from_sdk);
            match from_sdk.read_buf(&mut pending).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        self.close();
    }

    /// Writes the queue to the client until it is closed and empty, or the client's socket fails.
    pub(crate) async fn drain(&self, to_client: &mut (impl AsyncWrite + Unpin)) {
        while let Some(frame) = self.pop().await {
            if to_client.write_all(&frame.bytes).await.is_err() {
                return;
            }
        }
    }
}

/// The Foxglove protocol's binary opcode for message data (server to client).
const MESSAGE_DATA: u8 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    fn binary(payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0x82, payload.len() as u8];
        f.extend_from_slice(payload);
        f
    }

    fn outbox(messages: usize) -> (Arc<Clients>, Registration) {
        let clients = Arc::new(Clients::default());
        let reg = clients.register(SocketAddr::from(([127, 0, 0, 1], 1)), Limits { messages, bytes: 1 << 20 });
        (clients, reg)
    }

    async fn drained(o: &Outbox) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        o.drain(&mut out).await;
        let mut frames = Vec::new();
        let mut rest = &out[..];
        while !rest.is_empty() {
            let n = 2 + rest[1] as usize;
            frames.push(rest[2..n].to_vec());
            rest = &rest[n..];
        }
        frames
    }

    #[tokio::test]
    async fn a_full_queue_drops_its_oldest_messages_counted_and_keeps_control_frames() {
        let (clients, reg) = outbox(2);
        let mut wire = b"\x81\x02{}".to_vec(); // a text frame: control, never dropped
        for i in 0..5u8 {
            wire.extend(binary(&[MESSAGE_DATA, i]));
        }
        wire.extend(binary(&[2, 9])); // another binary opcode: not message data, never dropped
                                      // Split mid-frame: the parser must wait for the rest.
        let (first, second) = wire.split_at(5);
        let mut rest: &[u8] = second;
        reg.outbox.fill(&mut rest, first.to_vec(), |_| {}).await;
        assert_eq!(clients.total_dropped(), 3);
        let frames = drained(&reg.outbox).await;
        assert_eq!(frames, vec![b"{}".to_vec(), vec![MESSAGE_DATA, 3], vec![MESSAGE_DATA, 4], vec![2, 9]]);
        let stats = clients.stats();
        assert_eq!((stats[0].sent, stats[0].dropped, stats[0].queued), (2, 3, 0));
        drop(reg);
        assert!(clients.stats().is_empty());
        assert_eq!(clients.total_dropped(), 3, "a gone client's drops stay counted");
    }

    #[tokio::test]
    async fn what_is_not_a_frame_ends_the_stream() {
        let (_clients, reg) = outbox(8);
        let mut wire = binary(&[MESSAGE_DATA, 1]);
        wire.extend_from_slice(&[0x83, 0x00]); // a reserved opcode
        wire.extend(binary(&[MESSAGE_DATA, 2]));
        reg.outbox.fill(&mut &[][..], wire, |_| {}).await;
        assert_eq!(drained(&reg.outbox).await, vec![vec![MESSAGE_DATA, 1]]);
    }
}
