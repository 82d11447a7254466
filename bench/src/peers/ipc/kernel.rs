//! The kernel IPC peers of the latency suite: a named pipe (FIFO), a POSIX message queue, Unix stream and datagram
//! sockets, and UDP and TCP (`TCP_NODELAY`) on loopback. Each receiver has an endpoint of its own; a sender with
//! several targets writes the message to each in turn. Receivers block in the kernel (a blocking read with a 50 ms
//! timeout; the FIFO's read has none and ends at end of file, when the sender exits or is killed).

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

use super::sys::{mkfifo, Mq};
use super::{Got, IpcError, Rx, Tx, SIZE};
use crate::harness::clock::mono_ns;

/// How long one blocking receive waits before returning [`Got::Idle`].
const SLICE: Duration = Duration::from_millis(50);

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted)
}

/// Byte-stream framing: whole messages out of whatever `read` returns.
struct Framed<S> {
    s: S,
    buf: Box<[u8; 4096]>,
    start: usize,
    end: usize,
}

impl<S: Read> Framed<S> {
    fn new(s: S) -> Framed<S> {
        Framed { s, buf: Box::new([0u8; 4096]), start: 0, end: 0 }
    }

    fn recv(&mut self, out: &mut [u8; SIZE], what: &str) -> Result<Got, IpcError> {
        loop {
            if self.end - self.start >= SIZE {
                out.copy_from_slice(&self.buf[self.start..self.start + SIZE]);
                self.start += SIZE;
                return Ok(Got::Msg);
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            match self.s.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(Got::Closed),
                Ok(n) => self.end += n,
                Err(e) if is_timeout(&e) => return Ok(Got::Idle),
                Err(e) => return Err(IpcError::os(format!("reading {what}"), e)),
            }
        }
    }
}

/// Removes a FIFO or socket file when its receiver goes.
struct Unlink(PathBuf);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

// ---- pipe (a FIFO: the processes are not parent and child) ----

/// A FIFO's reader.
pub struct PipeRx {
    path: Unlink,
    r: Option<Framed<File>>,
}

impl PipeRx {
    /// Makes the FIFO (mode 0600).
    pub fn create(path: &str) -> Result<PipeRx, IpcError> {
        mkfifo(path.as_ref())?;
        Ok(PipeRx { path: Unlink(PathBuf::from(path)), r: None })
    }
}

impl Rx for PipeRx {
    fn attach(&mut self, _deadline_ns: u64) -> Result<(), IpcError> {
        // Opening for reading waits for the writer (and the writer's open waits for a reader), so a read can never
        // see end of file before the sender has come.
        let f = File::open(&self.path.0).map_err(|e| IpcError::os(format!("opening {}", self.path.0.display()), e))?;
        self.r = Some(Framed::new(f));
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8; SIZE], _deadline_ns: u64) -> Result<Got, IpcError> {
        match &mut self.r {
            Some(r) => r.recv(buf, "a FIFO"),
            None => Err(IpcError::bad("pipe: recv before attach")),
        }
    }
}

/// The writer of one FIFO per receiver.
pub struct PipeTx(Vec<File>);

impl PipeTx {
    /// Opens every FIFO for writing (waiting for its reader).
    pub fn open(paths: &[&str]) -> Result<PipeTx, IpcError> {
        let files = paths
            .iter()
            .map(|p| {
                std::fs::OpenOptions::new().write(true).open(p).map_err(|e| IpcError::os(format!("opening {p}"), e))
            })
            .collect::<Result<_, _>>()?;
        Ok(PipeTx(files))
    }
}

impl Tx for PipeTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        for f in &mut self.0 {
            // SIZE < PIPE_BUF: one write is atomic.
            f.write_all(msg).map_err(|e| IpcError::os("writing a FIFO", e))?;
        }
        Ok(())
    }
}

// ---- POSIX message queue ----

/// A queue's reader (creates the queue and removes its name when done).
pub struct MqRx {
    q: Mq,
    name: String,
}

impl MqRx {
    /// Creates queue `name` (64 messages of SIZE bytes, or the system's limit).
    pub fn create(name: &str) -> Result<MqRx, IpcError> {
        Mq::unlink(name);
        Ok(MqRx { q: Mq::create_reader(name, SIZE, 64)?, name: name.to_string() })
    }
}

impl Drop for MqRx {
    fn drop(&mut self) {
        Mq::unlink(&self.name);
    }
}

impl Rx for MqRx {
    fn recv(&mut self, buf: &mut [u8; SIZE], _deadline_ns: u64) -> Result<Got, IpcError> {
        match self.q.receive(buf, SLICE.as_millis() as u64)? {
            Some(SIZE) => Ok(Got::Msg),
            Some(n) => Err(IpcError::bad(format!("mq {}: a {n}-byte message", self.name))),
            None => Ok(Got::Idle),
        }
    }
}

/// The writer of one queue per receiver.
pub struct MqTx(Vec<Mq>);

impl MqTx {
    /// Opens every queue for writing.
    pub fn open(names: &[&str]) -> Result<MqTx, IpcError> {
        Ok(MqTx(names.iter().map(|n| Mq::open_writer(n)).collect::<Result<_, _>>()?))
    }
}

impl Tx for MqTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        for q in &self.0 {
            // Blocks while the queue is full (a reader that keeps up never lets it fill), at most one second.
            q.send(msg, 1000)?;
        }
        Ok(())
    }
}

// ---- stream sockets: Unix and TCP ----

/// Accepts one connection on a non-blocking listener, polling every millisecond until `deadline_ns`.
fn accept_until<T>(
    mut accept: impl FnMut() -> std::io::Result<T>,
    deadline_ns: u64,
    what: &str,
) -> Result<T, IpcError> {
    loop {
        match accept() {
            Ok(s) => return Ok(s),
            Err(e) if is_timeout(&e) && mono_ns() < deadline_ns => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(IpcError::os(format!("accepting on {what}"), e)),
        }
    }
}

/// A Unix stream socket's receiver.
pub struct UnixStreamRx {
    path: Unlink,
    listener: UnixListener,
    r: Option<Framed<UnixStream>>,
}

impl UnixStreamRx {
    /// Binds and listens at `path`.
    pub fn create(path: &str) -> Result<UnixStreamRx, IpcError> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).map_err(|e| IpcError::os(format!("binding {path}"), e))?;
        listener.set_nonblocking(true).map_err(|e| IpcError::os("O_NONBLOCK", e))?;
        Ok(UnixStreamRx { path: Unlink(PathBuf::from(path)), listener, r: None })
    }
}

impl Rx for UnixStreamRx {
    fn attach(&mut self, deadline_ns: u64) -> Result<(), IpcError> {
        let what = self.path.0.display().to_string();
        let (s, _) = accept_until(|| self.listener.accept(), deadline_ns, &what)?;
        s.set_nonblocking(false).map_err(|e| IpcError::os("clearing O_NONBLOCK", e))?;
        s.set_read_timeout(Some(SLICE)).map_err(|e| IpcError::os("SO_RCVTIMEO", e))?;
        self.r = Some(Framed::new(s));
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8; SIZE], _deadline_ns: u64) -> Result<Got, IpcError> {
        match &mut self.r {
            Some(r) => r.recv(buf, "a Unix stream socket"),
            None => Err(IpcError::bad("unix stream: recv before attach")),
        }
    }
}

/// One Unix stream connection per receiver.
pub struct UnixStreamTx(Vec<UnixStream>);

impl UnixStreamTx {
    /// Connects to every receiver.
    pub fn open(paths: &[&str]) -> Result<UnixStreamTx, IpcError> {
        let v = paths
            .iter()
            .map(|p| UnixStream::connect(p).map_err(|e| IpcError::os(format!("connecting to {p}"), e)))
            .collect::<Result<_, _>>()?;
        Ok(UnixStreamTx(v))
    }
}

impl Tx for UnixStreamTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        for s in &mut self.0 {
            s.write_all(msg).map_err(|e| IpcError::os("writing a Unix stream socket", e))?;
        }
        Ok(())
    }
}

/// A TCP receiver on loopback.
pub struct TcpRx {
    listener: TcpListener,
    addr: String,
    r: Option<Framed<TcpStream>>,
}

impl TcpRx {
    /// Listens on `addr` (`127.0.0.1:PORT`).
    pub fn create(addr: &str) -> Result<TcpRx, IpcError> {
        let listener = TcpListener::bind(addr).map_err(|e| IpcError::os(format!("binding tcp {addr}"), e))?;
        listener.set_nonblocking(true).map_err(|e| IpcError::os("O_NONBLOCK", e))?;
        Ok(TcpRx { listener, addr: addr.to_string(), r: None })
    }
}

impl Rx for TcpRx {
    fn attach(&mut self, deadline_ns: u64) -> Result<(), IpcError> {
        let (s, _) = accept_until(|| self.listener.accept(), deadline_ns, &self.addr)?;
        s.set_nonblocking(false).map_err(|e| IpcError::os("clearing O_NONBLOCK", e))?;
        s.set_nodelay(true).map_err(|e| IpcError::os("TCP_NODELAY", e))?;
        s.set_read_timeout(Some(SLICE)).map_err(|e| IpcError::os("SO_RCVTIMEO", e))?;
        self.r = Some(Framed::new(s));
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8; SIZE], _deadline_ns: u64) -> Result<Got, IpcError> {
        match &mut self.r {
            Some(r) => r.recv(buf, "a TCP socket"),
            None => Err(IpcError::bad("tcp: recv before attach")),
        }
    }
}

/// One TCP connection (`TCP_NODELAY`) per receiver.
pub struct TcpTx(Vec<TcpStream>);

impl TcpTx {
    /// Connects to every receiver.
    pub fn open(addrs: &[&str]) -> Result<TcpTx, IpcError> {
        let mut v = Vec::new();
        for a in addrs {
            let s = TcpStream::connect(a).map_err(|e| IpcError::os(format!("connecting to tcp {a}"), e))?;
            s.set_nodelay(true).map_err(|e| IpcError::os("TCP_NODELAY", e))?;
            v.push(s);
        }
        Ok(TcpTx(v))
    }
}

impl Tx for TcpTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        for s in &mut self.0 {
            s.write_all(msg).map_err(|e| IpcError::os("writing a TCP socket", e))?;
        }
        Ok(())
    }
}

// ---- datagram sockets: Unix and UDP ----

/// A Unix datagram socket's receiver.
pub struct UnixDgramRx {
    _path: Unlink,
    s: UnixDatagram,
}

impl UnixDgramRx {
    /// Binds at `path`.
    pub fn create(path: &str) -> Result<UnixDgramRx, IpcError> {
        let _ = std::fs::remove_file(path);
        let s = UnixDatagram::bind(path).map_err(|e| IpcError::os(format!("binding {path}"), e))?;
        s.set_read_timeout(Some(SLICE)).map_err(|e| IpcError::os("SO_RCVTIMEO", e))?;
        Ok(UnixDgramRx { _path: Unlink(PathBuf::from(path)), s })
    }
}

fn datagram(r: std::io::Result<usize>, what: &str) -> Result<Got, IpcError> {
    match r {
        Ok(SIZE) => Ok(Got::Msg),
        Ok(n) => Err(IpcError::bad(format!("{what}: a {n}-byte datagram"))),
        Err(e) if is_timeout(&e) => Ok(Got::Idle),
        Err(e) => Err(IpcError::os(format!("receiving on {what}"), e)),
    }
}

impl Rx for UnixDgramRx {
    fn recv(&mut self, buf: &mut [u8; SIZE], _deadline_ns: u64) -> Result<Got, IpcError> {
        datagram(self.s.recv(buf), "a Unix datagram socket")
    }
}

/// One connected Unix datagram socket per receiver.
pub struct UnixDgramTx(Vec<UnixDatagram>);

impl UnixDgramTx {
    /// Connects a socket to every receiver's path.
    pub fn open(paths: &[&str]) -> Result<UnixDgramTx, IpcError> {
        let mut v = Vec::new();
        for p in paths {
            let s = UnixDatagram::unbound().map_err(|e| IpcError::os("socket(AF_UNIX, SOCK_DGRAM)", e))?;
            s.connect(p).map_err(|e| IpcError::os(format!("connecting to {p}"), e))?;
            v.push(s);
        }
        Ok(UnixDgramTx(v))
    }
}

impl Tx for UnixDgramTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        for s in &self.0 {
            s.send(msg).map_err(|e| IpcError::os("sending on a Unix datagram socket", e))?;
        }
        Ok(())
    }
}

/// A UDP receiver on loopback.
pub struct UdpRx(UdpSocket);

impl UdpRx {
    /// Binds `addr` (`127.0.0.1:PORT`).
    pub fn create(addr: &str) -> Result<UdpRx, IpcError> {
        let s = UdpSocket::bind(addr).map_err(|e| IpcError::os(format!("binding udp {addr}"), e))?;
        s.set_read_timeout(Some(SLICE)).map_err(|e| IpcError::os("SO_RCVTIMEO", e))?;
        Ok(UdpRx(s))
    }
}

impl Rx for UdpRx {
    fn recv(&mut self, buf: &mut [u8; SIZE], _deadline_ns: u64) -> Result<Got, IpcError> {
        datagram(self.0.recv(buf), "a UDP socket")
    }
}

/// One connected UDP socket per receiver.
pub struct UdpTx(Vec<UdpSocket>);

impl UdpTx {
    /// Connects a socket to every receiver's address.
    pub fn open(addrs: &[&str]) -> Result<UdpTx, IpcError> {
        let mut v = Vec::new();
        for a in addrs {
            let s = UdpSocket::bind("127.0.0.1:0").map_err(|e| IpcError::os("binding a UDP sender", e))?;
            s.connect(a).map_err(|e| IpcError::os(format!("connecting to udp {a}"), e))?;
            v.push(s);
        }
        Ok(UdpTx(v))
    }
}

impl Tx for UdpTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        for s in &self.0 {
            s.send(msg).map_err(|e| IpcError::os("sending on a UDP socket", e))?;
        }
        Ok(())
    }
}
