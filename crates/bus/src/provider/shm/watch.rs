//! The directory watcher: learns of channel files made after a subscription (inotify, or a rescan every
//! [`RESCAN`] without it), and gives an inline dispatcher a chance to run callbacks while no channel is read.

use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use super::receive::{RecvShared, Start};
use super::Shm;
use crate::error::BusError;
use crate::provider::Sink;

/// How long the directory watcher sleeps at most before it looks at its stop flag.
const POLL: Duration = Duration::from_millis(100);
/// How often the directory is rescanned when inotify is not available.
pub const RESCAN: Duration = Duration::from_millis(500);

impl Shm {
    /// [`Provider::start`](crate::provider::Provider::start): sets the watch and starts the watcher thread.
    pub(super) fn start_watcher(&self, sink: Arc<dyn Sink>) -> Result<(), BusError> {
        let mut watcher = self.watcher.lock().expect("shm watcher lock");
        if watcher.is_some() {
            return Ok(());
        }
        // The watch is set here, before any subscription scans the directory, so that a channel made after a
        // scan is always seen by the watcher.
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok().and_then(|ino| {
            let flags = AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_ONLYDIR;
            ino.add_watch(&self.recv.dir, flags).ok().map(|_| ino)
        });
        self.recv.lock().sink = Some(sink);
        let shared = Arc::clone(&self.recv);
        let thread = std::thread::Builder::new()
            .name("nerve-shm-watch".into())
            .spawn(move || watch(shared, inotify))
            .map_err(|e| BusError::Transport { provider: "shm", source: Box::new(e) })?;
        *watcher = Some(thread);
        Ok(())
    }
}

/// Watches the directory for new channel files (or rescans it periodically without inotify), and gives an inline
/// dispatcher a chance to run callbacks while no channel is read.
fn watch(shared: Arc<RecvShared>, inotify: Option<Inotify>) {
    let mut last_scan = Instant::now();
    let mut callbacks_waiting = false;
    while !shared.stop.load(Ordering::Relaxed) {
        let wait = if callbacks_waiting { Duration::ZERO } else { POLL };
        let mut names: Vec<String> = Vec::new();
        let mut rescan = false;
        match &inotify {
            Some(ino) => {
                let mut fds = [nix::poll::PollFd::new(ino.as_fd(), nix::poll::PollFlags::POLLIN)];
                let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
                if nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms)).unwrap_or(0) > 0 {
                    for ev in ino.read_events().unwrap_or_default() {
                        if ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                            rescan = true;
                        } else if let Some(name) = ev.name.as_ref().and_then(|n| n.to_str()) {
                            names.push(name.to_owned());
                        }
                    }
                }
            }
            None => {
                std::thread::sleep(wait);
                rescan = last_scan.elapsed() >= RESCAN;
            }
        }
        let sink = {
            let mut st = shared.lock();
            for name in &names {
                shared.consider(&mut st, name, Start::Oldest);
            }
            if rescan {
                last_scan = Instant::now();
                shared.scan(&mut st, Start::Oldest);
            }
            st.sink.clone()
        };
        callbacks_waiting = sink.is_some_and(|s| s.drained());
    }
}
