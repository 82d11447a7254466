//! The `file://` provider (spec 4.5): `file://PATH?speed=S&start_timestamp=USEC` plays an LCM log (or an MCAP
//! recording, told by its first bytes) as if it were a live bus; `mode=w` (or `a`, append) writes every
//! publication to a log instead, as LCM's file provider does (an MCAP recording when PATH ends in `.mcap`).
//!
//! **Reading.** A playback thread reads the log with nerve-log's reader (which resynchronises on damage; an MCAP
//! file's damage ends playback with an error) and hands
//! each event to the bus at its time: the first at once, each later one at the playback's start plus its offset in
//! the log divided by `speed` (an absolute schedule, so lateness never accumulates); `speed` <= 0 plays as fast as
//! possible. As in LCM, a message's `recv_utime` is the wall time it was scheduled for, not the logged time, and
//! events are never skipped: playback falls behind if handlers are slow. An event is handed over only once the
//! callbacks of the one before it have been taken (by `handle()`, or by a dispatcher,
//! [`crate::Bus::spawn_dispatcher`], whose callbacks run on the playback thread), so the k-th `handle()` dispatches
//! the log's k-th event and no callback queue overflows whatever the speed, as LCM's file provider reads one event
//! per `handle()`; queue subscriptions ([`crate::Bus::subscriber`]) do not hold playback back. Playback starts when
//! the bus starts receiving (the first subscription); at the end of the log ([`Playback::finished`]) the provider
//! reports that receiving stopped, so the next `handle()` fails (LCM: -1). Damaged regions of the log are counted
//! in `ProviderStats::malformed`. Publishing on a log being read is an error, as in LCM.
//!
//! **Writing.** Each publication is one event stamped with the wall time; event numbers start at 0 each time the
//! file is opened (so append mode repeats them, as LCM's does). The file is flushed when the bus is dropped.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_codec::now_utime;
use nerve_log::mcap::{has_mcap_extension, AnyLog, Compression, McapWriter, TypeDefs};
use nerve_log::LogWriter;

use super::thread::ReceiveThread;
use super::{Incoming, Provider, ProviderStats, Sink};
use crate::error::BusError;
use crate::url::Url;

/// The options a `file://` URL takes.
pub const OPTIONS: &[&str] = &["speed", "mode", "start_timestamp"];

/// The longest the playback thread sleeps before looking at its stop flag.
const SLICE: Duration = Duration::from_millis(50);

/// How often the playback thread looks whether its last event has been taken.
const TAKEN_POLL: Duration = Duration::from_micros(100);

fn transport(e: impl std::error::Error + Send + Sync + 'static) -> BusError {
    BusError::Transport { provider: "file", source: Box::new(e) }
}

/// Playback progress, shared with whoever made the provider.
#[derive(Debug, Default)]
pub struct PlaybackState {
    finished: AtomicBool,
    delivered: AtomicU64,
    damaged: AtomicU64,
    /// The playback's clock, once the first event is played: what maps a `recv_utime` back to the log's time.
    clock: Mutex<Option<Clock>>,
    /// The log time of the newest event handed over (`i64::MIN` before the first).
    newest_log_utime: AtomicI64,
}

/// When the first event was played (wall µs) and its log time, and the speed: a later event of log time `t` is
/// played, and stamped, at `wall0_us + (t - log0) / speed`.
#[derive(Debug, Clone, Copy)]
struct Clock {
    wall0_us: i64,
    log0: i64,
    speed: f64,
}

/// A handle on a read-mode provider's playback.
#[derive(Debug, Clone)]
pub struct Playback(Arc<PlaybackState>);

impl Playback {
    /// Whether every event of the log has been handed to the bus.
    pub fn finished(&self) -> bool {
        self.0.finished.load(Ordering::Acquire)
    }

    /// Events handed to the bus so far.
    pub fn delivered(&self) -> u64 {
        self.0.delivered.load(Ordering::Relaxed)
    }

    /// Damaged regions of the log skipped so far.
    pub fn damaged(&self) -> u64 {
        self.0.damaged.load(Ordering::Relaxed)
    }

    /// The log's time (µs) of a message this playback stamped `recv_utime` (which is wall time, as in LCM): for a
    /// Foxglove timeline that follows the log. Exact at `speed=1`, within `speed` µs at other speeds (the
    /// schedule is kept in whole microseconds); at `speed=0`, which keeps no schedule, the log time of the newest
    /// event played. `None` before the first event.
    pub fn log_utime(&self, recv_utime: i64) -> Option<i64> {
        match *self.0.clock.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(c) if c.speed > 0.0 => {
                Some(c.log0.saturating_add((recv_utime.saturating_sub(c.wall0_us) as f64 * c.speed).round() as i64))
            }
            _ => Some(self.0.newest_log_utime.load(Ordering::Relaxed)).filter(|&t| t != i64::MIN),
        }
    }
}

enum Mode {
    Read {
        reader: Mutex<Option<Box<AnyLog>>>,
        speed: f64,
        start_utime: Option<i64>,
        thread: Mutex<Option<ReceiveThread>>,
    },
    Write {
        writer: Mutex<LogWriter<BufWriter<File>>>,
    },
    /// An MCAP recording (finished, with its summary, when the provider is dropped); no types are known here, so
    /// its channels have no schemas.
    WriteMcap {
        writer: Mutex<Option<Box<McapWriter>>>,
    },
}

/// A log file as a bus.
pub struct FileProvider {
    path: PathBuf,
    mode: Mode,
    state: Arc<PlaybackState>,
    published: AtomicU64,
}

impl FileProvider {
    /// From a `file://` URL's path and options (`speed`, `mode`, `start_timestamp`); unknown options are returned
    /// for the caller to warn about. The file is opened now, so a missing log is reported at creation.
    pub fn open(url: &str, path: &str, options: &[(String, String)]) -> Result<(FileProvider, Vec<String>), BusError> {
        let config = |reason: String| BusError::Config { url: url.to_owned(), reason };
        if path.is_empty() {
            return Err(config("missing filename: file://PATH (file:///abs/path for an absolute path)".into()));
        }
        let mut speed = 1.0;
        let mut mode = "r".to_owned();
        let mut start_utime = None;
        let mut unknown = Vec::new();
        for (k, v) in options {
            match k.as_str() {
                "speed" => {
                    speed = v
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite())
                        .ok_or_else(|| config(format!("speed={v}: not a number")))?
                }
                "mode" => mode = v.clone(),
                "start_timestamp" => {
                    start_utime =
                        Some(v.parse::<i64>().map_err(|_| config(format!("start_timestamp={v}: not microseconds")))?)
                }
                _ => unknown.push(k.clone()),
            }
        }
        let mode = match mode.as_str() {
            "r" => {
                let reader = Box::new(AnyLog::open(path).map_err(transport)?);
                Mode::Read { reader: Mutex::new(Some(reader)), speed, start_utime, thread: Mutex::new(None) }
            }
            "w" if has_mcap_extension(std::path::Path::new(path)) => {
                let no_types: TypeDefs = Arc::new(|_| None);
                let w = McapWriter::create(path, true, Compression::Zstd, no_types).map_err(transport)?;
                Mode::WriteMcap { writer: Mutex::new(Some(Box::new(w))) }
            }
            "a" if has_mcap_extension(std::path::Path::new(path)) => {
                return Err(config("mode=a: an MCAP file cannot be appended to (mode=w writes a new one)".into()))
            }
            "w" => Mode::Write { writer: Mutex::new(LogWriter::create(path, true).map_err(transport)?) },
            "a" => Mode::Write { writer: Mutex::new(LogWriter::append(path).map_err(transport)?) },
            other => return Err(config(format!("mode={other}: expected r, w or a"))),
        };
        let state = Arc::new(PlaybackState { newest_log_utime: AtomicI64::new(i64::MIN), ..PlaybackState::default() });
        let provider = FileProvider { path: PathBuf::from(path), mode, state, published: AtomicU64::new(0) };
        Ok((provider, unknown))
    }

    /// The registry's constructor for `file://PATH?options`: an unknown option is an error.
    pub fn from_url(url: &Url) -> Result<Box<dyn Provider>, BusError> {
        url.check_options(OPTIONS)?;
        let (file, _) = FileProvider::open(&url.to_string(), &url.network, &url.options)?;
        Ok(Box::new(file))
    }

    /// The playback's progress (for a log being read).
    pub fn playback(&self) -> Playback {
        Playback(Arc::clone(&self.state))
    }
}

impl Drop for FileProvider {
    fn drop(&mut self) {
        // Flushing here can fail with no one left to tell: a writer that must know calls `Bus::flush` first.
        let _ = self.flush();
        if let Mode::WriteMcap { writer } = &self.mode {
            if let Some(w) = writer.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = w.finish();
            }
        }
    }
}

/// Sleeps until `due`, in slices, unless `stop` is set; false when stopped.
fn sleep_until(due: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(SLICE));
    }
}

/// Waits until the event just delivered has been taken by `handle()` or a dispatcher (callback subscriptions hold
/// nothing more), unless `stop` is set; false when stopped. So each `handle()` gets the next event of the log, as
/// LCM's file provider reads one event per `handle()`, and no callback queue ever overflows at any speed.
fn wait_taken(sink: &dyn Sink, stop: &AtomicBool) -> bool {
    while sink.waiting() {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        // An inline dispatcher started after the event was delivered (`subscribe_with`, which starts playback,
        // then `spawn_dispatcher`, as `nerve log` does) runs its callbacks on this thread: run them here, or the
        // event waits for a `handle()` that never comes and playback stalls on its first event.
        if !sink.drained() {
            std::thread::sleep(TAKEN_POLL);
        }
    }
    true
}

impl Provider for FileProvider {
    fn name(&self) -> &'static str {
        "file"
    }

    fn publish(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        match &self.mode {
            Mode::Read { .. } => Err(BusError::Config {
                url: format!("file://{}", self.path.display()),
                reason: "publishing on a log opened for reading (use mode=w to write one)".into(),
            }),
            Mode::Write { writer } => {
                writer.lock().expect("log writer lock").write_event(now_utime(), channel, data).map_err(transport)?;
                self.published.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Mode::WriteMcap { writer } => {
                let mut w = writer.lock().expect("log writer lock");
                w.as_mut().expect("open until dropped").write_event(now_utime(), channel, data).map_err(transport)?;
                self.published.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    fn start(&self, sink: Arc<dyn Sink>) -> Result<(), BusError> {
        let Mode::Read { reader, speed, start_utime, thread } = &self.mode else { return Ok(()) };
        let mut slot = thread.lock().expect("playback lock");
        let Some(mut reader) = reader.lock().expect("reader lock").take() else { return Ok(()) };
        let (speed, start_utime, state) = (*speed, *start_utime, Arc::clone(&self.state));
        *slot = Some(ReceiveThread::spawn("file", "nerve-file-play", move |stop| {
            let mut origin: Option<(Instant, i64, i64)> = None; // (wall, wall µs, log µs) of the first event
            loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let ev = match reader.next_event() {
                    Ok(Some(ev)) => ev,
                    Ok(None) => break,
                    Err(e) => {
                        sink.receive_stopped(transport(e));
                        break;
                    }
                };
                if start_utime.is_some_and(|s| ev.utime < s) {
                    continue;
                }
                let recv_utime = if speed > 0.0 {
                    let (wall0, wall0_us, log0) = *origin.get_or_insert_with(|| {
                        let wall0_us = now_utime();
                        *state.clock.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(Clock { wall0_us, log0: ev.utime, speed });
                        (Instant::now(), wall0_us, ev.utime)
                    });
                    let offset_us = (ev.utime.saturating_sub(log0)).max(0) as f64 / speed;
                    if !sleep_until(wall0 + Duration::from_secs_f64(offset_us / 1e6), stop) {
                        return;
                    }
                    wall0_us + offset_us as i64
                } else {
                    now_utime()
                };
                state.newest_log_utime.store(ev.utime, Ordering::Relaxed);
                let msg = Incoming { channel: ev.channel().into_owned(), data: ev.data.to_vec(), recv_utime };
                state.damaged.store(reader.damage_totals().regions, Ordering::Relaxed);
                sink.deliver(msg);
                state.delivered.fetch_add(1, Ordering::Relaxed);
                // With an inline dispatcher, run every callback this event queued before the next one.
                while sink.drained() {}
                if !wait_taken(&*sink, stop) {
                    return;
                }
            }
            state.damaged.store(reader.damage_totals().regions, Ordering::Relaxed);
            state.finished.store(true, Ordering::Release);
            // As in LCM, the handle() after the last event fails: nothing more will come.
            sink.receive_stopped(transport(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the log has been played to its end",
            )));
            // Callbacks still queued run when the user's handle() or dispatcher gets to them; stay until stopped
            // so that an inline dispatcher keeps being served.
            while !stop.load(Ordering::Relaxed) {
                if !sink.drained() {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        })?);
        Ok(())
    }

    fn has_receive_thread(&self) -> bool {
        matches!(self.mode, Mode::Read { .. })
    }

    /// Writes what the log's buffer holds to the file.
    fn flush(&self) -> Result<(), BusError> {
        match &self.mode {
            Mode::Write { writer } => writer.lock().unwrap_or_else(|e| e.into_inner()).flush().map_err(transport),
            Mode::WriteMcap { writer } => match writer.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                Some(w) => w.flush().map_err(transport),
                None => Ok(()),
            },
            Mode::Read { .. } => Ok(()),
        }
    }

    fn stats(&self) -> ProviderStats {
        ProviderStats {
            published: self.published.load(Ordering::Relaxed),
            received: self.state.delivered.load(Ordering::Relaxed),
            malformed: self.state.damaged.load(Ordering::Relaxed),
            ..ProviderStats::default()
        }
    }
}
