//! Publishing: one nerve-shm [`Writer`] per bus channel, made on its first publication.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_shm::{encode_channel, Channel, ShmError, Writer};

use super::{transport, Shm, ShmProviderError};
use crate::error::BusError;

/// How often a publisher checks that its channel's path still names the file it writes (a `stat`): a channel
/// removed and made anew, or replaced by a rename over it, is opened again within this long.
const FILE_CHECK: Duration = Duration::from_millis(100);

/// A channel's writer as the provider keeps it, with when it last checked that its file is still the channel's.
pub(super) struct Publisher {
    writer: Writer,
    checked: Instant,
}

/// The writers by bus channel.
pub(super) type Writers = Mutex<std::collections::HashMap<String, Arc<Mutex<Publisher>>>>;

impl Shm {
    /// [`Provider::publish`](crate::provider::Provider::publish): puts `data` on `channel`'s writer.
    pub(super) fn publish_message(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        self.check_fits_new_channel(channel, data.len())?;
        let mut writer = self.writer(channel)?;
        let stale = {
            let mut p = writer.lock().expect("shm writer lock");
            // A file truncated under the writer (it reads zeros since), or removed or replaced (its messages would go
            // to a file nobody opens any more): the channel is opened again, or made again if it is gone.
            let due = p.checked.elapsed() >= FILE_CHECK;
            if due {
                p.checked = Instant::now();
            }
            p.writer.is_damaged() || (due && !p.writer.is_current())
        };
        if stale {
            self.writers.lock().expect("shm writers lock").remove(channel);
            writer = self.writer(channel)?;
        }
        let mut p = writer.lock().expect("shm writer lock");
        let w = &mut p.writer;
        if data.len() > w.max_message() {
            let path =
                nerve_shm::channel_path(&encode_channel(channel), self.config.dir.as_deref()).unwrap_or_default();
            let frame_size = w.max_message() as u64;
            if frame_size != self.config.frame_size {
                return Err(transport(ShmProviderError::ChannelSizesDiffer {
                    channel: channel.to_owned(),
                    path,
                    len: data.len(),
                    frame_size,
                    url_frame_size: self.config.frame_size,
                }));
            }
            return Err(transport(ShmProviderError::MessageTooLarge {
                channel: channel.to_owned(),
                path,
                len: data.len(),
                frame_size: w.max_message() as u64,
            }));
        }
        w.put(data).map_err(|source| transport(ShmProviderError::Channel { channel: channel.to_owned(), source }))?;
        drop(p);
        self.recv.counters.published.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The writer of `channel`, made (and the channel opened or made) on first use.
    fn writer(&self, channel: &str) -> Result<Arc<Mutex<Publisher>>, BusError> {
        let mut writers = self.writers.lock().expect("shm writers lock");
        if let Some(w) = writers.get(channel) {
            return Ok(Arc::clone(w));
        }
        let err = |source| transport(ShmProviderError::Channel { channel: channel.to_owned(), source });
        let name = encode_channel(channel);
        let dir = self.config.dir.as_deref();
        // The channel's creator chose its sizes: an existing channel is used as it is.
        let opened = match Channel::open(&name, dir) {
            Err(ShmError::NotFound { .. }) => match Channel::open_or_create(&name, &self.config.channel_config()) {
                // Made meanwhile by someone else, with other sizes.
                Err(ShmError::SizeMismatch { .. }) => Channel::open(&name, dir),
                other => other,
            },
            other => other,
        };
        let mut writer = opened.map_err(err)?.writer();
        writer.set_origin(self.origin);
        let writer = Arc::new(Mutex::new(Publisher { writer, checked: Instant::now() }));
        writers.insert(channel.to_owned(), Arc::clone(&writer));
        Ok(writer)
    }

    /// Refuses a message of `len` bytes for a channel that does not exist yet when it would not fit the channel
    /// this URL would make: a failed publication must not leave behind a channel that refuses the retry.
    fn check_fits_new_channel(&self, channel: &str, len: usize) -> Result<(), BusError> {
        if len as u64 <= self.config.frame_size || self.writers.lock().expect("shm writers lock").contains_key(channel)
        {
            return Ok(());
        }
        match Channel::open(&encode_channel(channel), self.config.dir.as_deref()) {
            Err(ShmError::NotFound { path }) => Err(transport(ShmProviderError::TooLargeToMake {
                channel: channel.to_owned(),
                path,
                len,
                frame_size: self.config.frame_size,
            })),
            // It exists (its size is checked against the message by `publish`), or fails to open as `writer` will say.
            _ => Ok(()),
        }
    }
}
