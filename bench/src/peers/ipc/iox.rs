//! iceoryx2 (0.10, the crate) as a latency peer: a publish-subscribe service of `[u8; 64]`, one publish read by every
//! subscriber (zero copy on the receiving side; the sender copies the 64 bytes into its loaned sample).
//!
//! - `iox-poll`: the receiver spins on `Subscriber::receive` (iceoryx2's own way to get low latency).
//! - `iox-event`: the sender also notifies an event service of the same name after each publish and the receiver
//!   sleeps in `Listener::timed_wait` (iceoryx2's wake-up path; on Linux a Unix datagram socket) when it finds
//!   nothing.

use std::time::Duration;

use iceoryx2::port::listener::Listener;
use iceoryx2::port::notifier::Notifier;
use iceoryx2::port::publisher::Publisher;
use iceoryx2::port::subscriber::Subscriber;
use iceoryx2::prelude::*;

use super::{Got, IpcError, Rx, Tx, SIZE};
use crate::harness::clock::mono_ns;

type Msg = [u8; SIZE];

/// Subscriber queue depth (messages a slow reader may be behind before the oldest is overwritten).
const BUFFER: usize = 256;

struct Common {
    node: Node<ipc::Service>,
    name: ServiceName,
}

fn common(name: &str) -> Result<Common, IpcError> {
    set_log_level(LogLevel::Error);
    let node = NodeBuilder::new()
        .signal_handling_mode(SignalHandlingMode::Disabled)
        .create::<ipc::Service>()
        .map_err(|e| IpcError::iox("creating a node", e))?;
    let name: ServiceName = name.try_into().map_err(|e| IpcError::iox(format!("service name {name:?}"), e))?;
    Ok(Common { node, name })
}

impl Common {
    fn pubsub(
        &self,
    ) -> Result<iceoryx2::service::port_factory::publish_subscribe::PortFactory<ipc::Service, Msg, ()>, IpcError> {
        self.node
            .service_builder(&self.name)
            .publish_subscribe::<Msg>()
            .subscriber_max_buffer_size(BUFFER)
            .history_size(0)
            .max_subscribers(8)
            .max_publishers(2)
            .open_or_create()
            .map_err(|e| IpcError::iox(format!("publish_subscribe service {}", self.name), e))
    }

    fn event(&self) -> Result<iceoryx2::service::port_factory::event::PortFactory<ipc::Service>, IpcError> {
        self.node
            .service_builder(&self.name)
            .event()
            .open_or_create()
            .map_err(|e| IpcError::iox(format!("event service {}", self.name), e))
    }
}

/// A subscriber, and with `iox-event` a listener.
pub struct IoxRx {
    sub: Subscriber<ipc::Service, Msg, ()>,
    listener: Option<Listener<ipc::Service>>,
    _common: Common,
}

impl IoxRx {
    /// Opens (or creates) the service `name` and subscribes; `event`: also listen on its event service.
    pub fn open(name: &str, event: bool) -> Result<IoxRx, IpcError> {
        let c = common(name)?;
        let sub = c
            .pubsub()?
            .subscriber_builder()
            .buffer_size(BUFFER)
            .create()
            .map_err(|e| IpcError::iox("creating a subscriber", e))?;
        let listener = if event {
            Some(c.event()?.listener_builder().create().map_err(|e| IpcError::iox("creating a listener", e))?)
        } else {
            None
        };
        Ok(IoxRx { sub, listener, _common: c })
    }

    fn take(&self, buf: &mut [u8; SIZE]) -> Result<bool, IpcError> {
        match self.sub.receive().map_err(|e| IpcError::iox("receive", e))? {
            Some(s) => {
                buf.copy_from_slice(&*s);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

impl Rx for IoxRx {
    fn recv(&mut self, buf: &mut [u8; SIZE], deadline_ns: u64) -> Result<Got, IpcError> {
        if let Some(l) = &self.listener {
            if self.take(buf)? {
                return Ok(Got::Msg);
            }
            l.timed_wait(|_| {}, Duration::from_millis(50)).map_err(|e| IpcError::iox("timed_wait", e))?;
            return Ok(if self.take(buf)? { Got::Msg } else { Got::Idle });
        }
        let mut spins: u32 = 0;
        loop {
            if self.take(buf)? {
                return Ok(Got::Msg);
            }
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins & 1023 == 0 && mono_ns() >= deadline_ns {
                return Ok(Got::Idle);
            }
        }
    }
}

/// A publisher, and with `iox-event` a notifier.
pub struct IoxTx {
    publisher: Publisher<ipc::Service, Msg, ()>,
    notifier: Option<Notifier<ipc::Service>>,
    _common: Common,
}

impl IoxTx {
    /// Opens the service `name` the receivers made and creates a publisher (and a notifier).
    pub fn open(name: &str, event: bool) -> Result<IoxTx, IpcError> {
        let c = common(name)?;
        let publisher =
            c.pubsub()?.publisher_builder().create().map_err(|e| IpcError::iox("creating a publisher", e))?;
        let notifier = if event {
            Some(c.event()?.notifier_builder().create().map_err(|e| IpcError::iox("creating a notifier", e))?)
        } else {
            None
        };
        Ok(IoxTx { publisher, notifier, _common: c })
    }
}

impl Tx for IoxTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        self.publisher.send_copy(*msg).map_err(|e| IpcError::iox("send_copy", e))?;
        if let Some(n) = &self.notifier {
            n.notify().map_err(|e| IpcError::iox("notify", e))?;
        }
        Ok(())
    }
}
