//! Typed in-process delivery (after ROS 2's intra-process design article): publishers and subscriptions in one process
//! exchange typed values directly, with no encoding and no copy that ownership does not require.
//!
//! # Brief overview
//!
//! [`Bus::publisher`] makes a [`Publisher<T>`]: [`Publisher::publish`] hands over an owned `T` ("unique"),
//! [`Publisher::publish_shared`] an `Arc<T>`. A subscription says how it takes messages: owned
//! ([`Bus::subscribe_owned`], the handler gets a `T` it may mutate and keep) or shared ([`Bus::subscribe_shared`],
//! an `Arc<T>`, read-only); [`Bus::subscriber_owned`] / [`Bus::subscriber_shared`] are the queue forms. Callbacks
//! run on [`Bus::handle`] (or the bus's `Dispatcher`), or on an [`Executor`](crate::Executor)'s threads when made
//! through it. Each publisher and subscription has a [`Qos`] (`crate::qos` says what each policy means here).
//!
//! ```
//! use std::sync::Arc;
//! # use nerve_codec::{Decode, DecodeError, Encode, EncodeError, Message, Reader, Writer};
//! # #[derive(Clone)] struct Image { data: Vec<u8> }
//! # impl Encode for Image { fn encoded_body_size(&self) -> usize { 4 + self.data.len() }
//! #   fn encode_body(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> { w.put_i32(self.data.len() as i32)?;
//! w.put_bytes(&self.data) } }
//! # impl Decode for Image { fn decode_body(r: &mut Reader<'_>) -> Result<Self, DecodeError> { let n = r.get_i32()?;
//! let n = r.count(n as i64)?; Ok(Image { data: r.get_bytes(n)?.to_vec() }) } }
//! # impl Message for Image { const FINGERPRINT: u64 = 1; const TYPE_NAME: &'static str = "doc.image_t"; }
//! let bus = nerve_bus::Bus::new(Some("inproc://"))?;
//! let qos = nerve_bus::Qos::keep_last(4);
//! let viewer = bus.subscribe_shared::<Image>("CAMERA", qos, |img: Arc<Image>| println!("{} bytes", img.data.len()))?;
//! let camera = bus.publisher::<Image>("CAMERA", qos)?;
//! camera.publish(Image { data: vec![0; 640 * 480 * 3] })?; // moved, never copied: one sharing subscription
//! bus.handle()?;
//! # Ok::<(), nerve_bus::BusError>(())
//! ```
//!
//! # Design
//!
//! **One queue per subscription** (the article's proposal), the same queues the byte-level subscriptions use: so every
//! subscription's history and full-queue policy is its own, subscriptions are drained independently (on an executor,
//! in parallel), and a publisher only ever pushes: it never waits for a subscription. A queue holds what its
//! subscription takes: an owned `T` or an `Arc<T>`, so taking a message never copies it.
//!
//! **The copies are decided when publishing**, from how many matching subscriptions own and how many share, by
//! `copies::distribute`: exactly the article's two tables. A transient-local publisher keeps every message it
//! publishes as an `Arc<T>` for late joiners, so its owned publications follow the shared table.
//!
//! **Matching is by exact channel name and type.** A typed subscription is on one channel (no pattern), matched to a
//! publisher when the channel is equal and the fingerprint too; a publisher and a subscription of different
//! fingerprints (or incompatible QoS) on one channel are refused when the second is created, and counted in the
//! first's stats. Two Rust types with the same fingerprint (the same LCM type generated twice) still talk, through
//! the encoding.
//!
//! **The same publication reaches everything else once.** When byte-level subscriptions of this bus match the
//! channel, or when the transport can reach other processes (udpm, mpudpm, shm), the message is encoded once, from
//! a borrow before any subscription takes it, and the bytes go to those subscriptions and to the transport. The
//! transport never hands this bus's own messages back (udpm recognises its own send socket's address, shm the
//! writer's origin id), so a subscription inside the process never gets a second copy through the network (the
//! article's "Problems when both inter and intra-process communication are needed"). Messages from other processes, and
//! raw publishes, reach typed subscriptions decoded once per Rust type, then shared or copied by the same tables as an
//! owned publication.

use std::any::{Any, TypeId};
use std::marker::PhantomData;
use std::sync::{Arc, Condvar};
use std::time::Duration;

use nerve_codec::Message;

use crate::bus::{Bus, Subscription};
use crate::error::BusError;
use crate::executor::Executor;
use crate::hub::erased::{assign, decode_group};
use crate::hub::{
    decode_as, distribute, unsupported, Full, Handler, Hub, Item, Local, Msg, Prepared, QueueHandle, Received, Runner,
    SubscriptionStats, TypedInfo,
};
pub use crate::hub::{PublisherStats, Take};
use crate::pattern::Pattern;
use crate::qos::Qos;

fn into_owned<T: Message + Clone + Send + Sync + 'static>(item: Item) -> Option<T> {
    match item {
        Item::Owned(b) => b.downcast::<T>().ok().map(|b| *b),
        Item::Shared(a) => a.downcast::<T>().ok().map(|a| Arc::try_unwrap(a).unwrap_or_else(|a| (*a).clone())),
        Item::Bytes(r) => decode_as::<T>(&r.data).ok(),
    }
}

fn into_shared<T: Message + Send + Sync + 'static>(item: Item) -> Option<Arc<T>> {
    match item {
        Item::Shared(a) => a.downcast::<T>().ok(),
        Item::Owned(b) => b.downcast::<T>().ok().map(|b| Arc::new(*b)),
        Item::Bytes(r) => decode_as::<T>(&r.data).ok().map(Arc::new),
    }
}

/// A typed publisher on one channel. Dropping it unregisters it (and its transient-local store goes with it).
pub struct Publisher<T> {
    hub: Arc<Hub>,
    id: u64,
    channel: String,
    transient: bool,
    _type: PhantomData<fn(T)>,
}

impl<T> std::fmt::Debug for Publisher<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher").field("channel", &self.channel).field("id", &self.id).finish()
    }
}

impl<T: Message + Clone + Send + Sync + 'static> Publisher<T> {
    /// Publishes an owned message: it moves to the subscriptions, copied only as the intra-process article's first
    /// table says.
    ///
    /// Returns [`BusError::LimitReached`] when a reliable keep-all subscription could not take it (every other
    /// subscription did), and a transport error when sending to other processes failed (every subscription of this
    /// process got it).
    pub fn publish(&self, msg: T) -> Result<(), BusError> {
        self.send(Msg::Owned(msg))
    }

    /// Publishes a shared message: sharing subscriptions get this very allocation, owning ones a copy each (the
    /// intra-process article's second table).
    pub fn publish_shared(&self, msg: Arc<T>) -> Result<(), BusError> {
        self.send(Msg::Shared(msg))
    }

    fn send(&self, msg: Msg<T>) -> Result<(), BusError> {
        let hub = &self.hub;
        // A transient-local publisher stores every message shared; an owned one becomes shared without a copy.
        let (msg, history) = if self.transient {
            let arc = match msg {
                Msg::Owned(t) => Arc::new(t),
                Msg::Shared(a) => a,
            };
            let stored: Arc<dyn Any + Send + Sync> = arc.clone();
            (Msg::Shared(arc), Some((self.id, stored)))
        } else {
            (msg, None)
        };
        let plan = hub.plan(&self.channel, Some(TypeId::of::<T>()), history);
        let to_transport = hub.provider.leaves_process();
        let bytes = if to_transport || plan.byte_subs || !plan.groups.is_empty() {
            let value: &T = match &msg {
                Msg::Owned(t) => t,
                Msg::Shared(a) => a,
            };
            Some(value.encode().map_err(BusError::Encode)?)
        } else {
            None
        };
        let owners = plan.own.iter().filter(|t| t.take == Take::Owned).count();
        let d = distribute(msg, owners, plan.own.len() - owners);
        let mut items = Vec::with_capacity(plan.own.len());
        let owned = d.owned.into_iter().map(|t| Item::Owned(Box::new(t))).collect();
        assign(&plan.own, owned, d.shared.map(|a| a as Arc<dyn Any + Send + Sync>), &mut items);
        let mut failed = Vec::new();
        if let Some(b) = &bytes {
            for g in &plan.groups {
                decode_group(g, b, &mut items, &mut failed);
            }
        }
        let (received, bytes) = match bytes {
            Some(data) if plan.byte_subs => {
                let r = Arc::new(Received {
                    channel: self.channel.clone(),
                    data,
                    recv_utime: nerve_codec::now_utime(),
                    origin: crate::hub::Origin::Local,
                });
                (Some(Arc::clone(&r)), Some(Bytes::Shared(r)))
            }
            other => (None, other.map(Bytes::Owned)),
        };
        let publisher = (self.id, d.copies, bytes.is_some());
        let local = Local::Typed(Prepared { items, received, failed, publisher });
        let done = hub.publish(&self.channel, local, bytes.as_ref().map(Bytes::as_slice))?;
        if done.refused_reliable > 0 {
            return Err(BusError::LimitReached {
                channel: self.channel.clone(),
                subscriptions: done.refused_reliable,
                limit: done.limit,
            });
        }
        Ok(())
    }

    /// Counters so far.
    pub fn stats(&self) -> PublisherStats {
        self.hub.publisher_stats(self.id)
    }

    /// The channel.
    pub fn channel(&self) -> &str {
        &self.channel
    }
}

impl<T> Drop for Publisher<T> {
    fn drop(&mut self) {
        self.hub.remove_publisher(self.id);
    }
}

/// The encoded bytes of a publication, shared with byte-level subscriptions or not.
enum Bytes {
    Owned(Vec<u8>),
    Shared(Arc<Received>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Shared(r) => &r.data,
        }
    }
}

/// A typed queue subscription: `M` is `T` (owned) or `Arc<T>` (shared). Dropping it unsubscribes.
pub struct TypedSubscriber<M> {
    id: u64,
    hub: Arc<Hub>,
    cond: Arc<Condvar>,
    convert: fn(Item) -> Option<M>,
}

impl<M> TypedSubscriber<M> {
    fn handle(&self) -> QueueHandle<'_> {
        QueueHandle { id: self.id, hub: &self.hub, cond: &self.cond }
    }

    /// The next message, if one is waiting.
    pub fn try_recv(&self) -> Option<M> {
        self.handle().try_recv().and_then(self.convert)
    }

    /// Waits up to `timeout` for the next message.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<M> {
        self.handle().recv(Some(timeout)).and_then(self.convert)
    }

    /// Waits for the next message.
    pub fn recv(&self) -> M {
        loop {
            if let Some(m) = self.handle().recv(None).and_then(self.convert) {
                return m;
            }
        }
    }

    /// Counters of this subscription.
    pub fn stats(&self) -> SubscriptionStats {
        self.handle().stats()
    }
}

impl<M> Drop for TypedSubscriber<M> {
    fn drop(&mut self) {
        self.handle().remove();
    }
}

fn checked(bus: &Bus, channel: &str, qos: &Qos, subscription: bool) -> Result<Pattern, BusError> {
    qos.validate().map_err(|reason| BusError::InvalidQos { channel: channel.to_owned(), reason })?;
    if subscription {
        if let Some(policy) = bus.hub.provider.qos_support().refuses(qos, true) {
            return Err(unsupported(bus.hub.provider.name(), channel, policy));
        }
    }
    Pattern::exact(channel).map_err(BusError::Pattern)
}

fn subscribe_typed<T: Message + Clone + Send + Sync + 'static>(
    bus: &Bus,
    channel: &str,
    qos: Qos,
    take: Take,
    handler: Handler,
    exec: Option<&Executor>,
) -> Result<Subscription, BusError> {
    let pattern = checked(bus, channel, &qos, true)?;
    let (capacity, refuse) = qos.queue();
    let info = TypedInfo::of::<T>(channel, qos, take);
    let runner = match exec {
        None => Runner::Callback(handler),
        Some(e) => Runner::Executor(handler, e.ready_queue()),
    };
    let id = bus.hub.add(pattern, runner, capacity, Full::history(refuse), Some(info))?;
    Ok(Subscription::new(id, &bus.hub))
}

fn owned_handler<T: Message + Clone + Send + Sync + 'static>(mut handler: impl FnMut(T) + Send + 'static) -> Handler {
    Box::new(move |item| {
        if let Some(t) = into_owned::<T>(item) {
            handler(t);
        }
        Ok(())
    })
}

fn shared_handler<T: Message + Clone + Send + Sync + 'static>(
    mut handler: impl FnMut(Arc<T>) + Send + 'static,
) -> Handler {
    Box::new(move |item| {
        if let Some(t) = into_shared::<T>(item) {
            handler(t);
        }
        Ok(())
    })
}

impl Bus {
    /// A typed publisher on `channel`. Refused ([`BusError::TypeMismatch`], [`BusError::IncompatibleQos`]) when a
    /// typed subscription already on the channel takes another type or asks for more than `qos` offers, and
    /// ([`BusError::QosUnsupported`]) when `qos` is reliable and the transport cannot be.
    pub fn publisher<T: Message + Clone + Send + Sync + 'static>(
        &self,
        channel: &str,
        qos: Qos,
    ) -> Result<Publisher<T>, BusError> {
        checked(self, channel, &qos, false)?;
        let transient = qos.transient_depth().is_some();
        let id = self.hub.add_publisher(TypedInfo::of::<T>(channel, qos, Take::Shared))?;
        Ok(Publisher { hub: Arc::clone(&self.hub), id, channel: channel.to_owned(), transient, _type: PhantomData })
    }

    /// Subscribes a callback, run by `handle()`, that takes each message of type `T` on `channel` as its own `T`.
    /// Refused like [`Bus::publisher`] when a publisher on the channel cannot serve it, and when the transport
    /// cannot honour `qos` (reliable or transient-local over udpm).
    pub fn subscribe_owned<T: Message + Clone + Send + Sync + 'static>(
        &self,
        channel: &str,
        qos: Qos,
        handler: impl FnMut(T) + Send + 'static,
    ) -> Result<Subscription, BusError> {
        subscribe_typed::<T>(self, channel, qos, Take::Owned, owned_handler(handler), None)
    }

    /// Subscribes a callback, run by `handle()`, that takes each message of type `T` on `channel` shared, read-only.
    pub fn subscribe_shared<T: Message + Clone + Send + Sync + 'static>(
        &self,
        channel: &str,
        qos: Qos,
        handler: impl FnMut(Arc<T>) + Send + 'static,
    ) -> Result<Subscription, BusError> {
        subscribe_typed::<T>(self, channel, qos, Take::Shared, shared_handler(handler), None)
    }

    /// A queue of the messages of type `T` on `channel`, each taken as the caller's own `T`.
    pub fn subscriber_owned<T: Message + Clone + Send + Sync + 'static>(
        &self,
        channel: &str,
        qos: Qos,
    ) -> Result<TypedSubscriber<T>, BusError> {
        self.typed_queue::<T, T>(channel, qos, Take::Owned, into_owned::<T>)
    }

    /// A queue of the messages of type `T` on `channel`, each taken shared.
    pub fn subscriber_shared<T: Message + Clone + Send + Sync + 'static>(
        &self,
        channel: &str,
        qos: Qos,
    ) -> Result<TypedSubscriber<Arc<T>>, BusError> {
        self.typed_queue::<T, Arc<T>>(channel, qos, Take::Shared, into_shared::<T>)
    }

    fn typed_queue<T: Message + Clone + Send + Sync + 'static, M>(
        &self,
        channel: &str,
        qos: Qos,
        take: Take,
        convert: fn(Item) -> Option<M>,
    ) -> Result<TypedSubscriber<M>, BusError> {
        let pattern = checked(self, channel, &qos, true)?;
        let (capacity, refuse) = qos.queue();
        let info = TypedInfo::of::<T>(channel, qos, take);
        let cond = Arc::new(Condvar::new());
        let id =
            self.hub.add(pattern, Runner::Queue(Arc::clone(&cond)), capacity, Full::history(refuse), Some(info))?;
        Ok(TypedSubscriber { id, hub: Arc::clone(&self.hub), cond, convert })
    }
}

impl Executor {
    /// Like [`Bus::subscribe_owned`], with the callback run on this executor's threads.
    pub fn subscribe_owned<T: Message + Clone + Send + Sync + 'static>(
        &self,
        bus: &Bus,
        channel: &str,
        qos: Qos,
        handler: impl FnMut(T) + Send + 'static,
    ) -> Result<Subscription, BusError> {
        subscribe_typed::<T>(bus, channel, qos, Take::Owned, owned_handler(handler), Some(self))
    }

    /// Like [`Bus::subscribe_shared`], with the callback run on this executor's threads.
    pub fn subscribe_shared<T: Message + Clone + Send + Sync + 'static>(
        &self,
        bus: &Bus,
        channel: &str,
        qos: Qos,
        handler: impl FnMut(Arc<T>) + Send + 'static,
    ) -> Result<Subscription, BusError> {
        subscribe_typed::<T>(bus, channel, qos, Take::Shared, shared_handler(handler), Some(self))
    }
}
