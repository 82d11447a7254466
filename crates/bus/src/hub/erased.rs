//! The type-erased half of typed in-process delivery: what the hub needs to know of a typed publisher or
//! subscription ([`TypedInfo`]) and the operations on its type that paths not knowing `T` statically use ([`Ops`]:
//! bytes from the transport decoded for a group of typed subscriptions, a transient-local store read by another
//! Rust type of the same LCM type). The generic API over it is `crate::typed`.

use std::any::{Any, TypeId};
use std::sync::Arc;

use nerve_codec::{EncodeError, Message};

use super::copies::{distribute, Msg};
use super::{DecodeGroup, Item, Target};
use crate::error::TypeError;
use crate::qos::Qos;

/// Decodes `data` as `M`, checking the fingerprint first.
pub(crate) fn decode_as<M: Message>(data: &[u8]) -> Result<M, TypeError> {
    let found = nerve_codec::fingerprint_of(data);
    if found != Some(M::FINGERPRINT) {
        return Err(TypeError::WrongType { expected: M::TYPE_NAME, expected_fingerprint: M::FINGERPRINT, found });
    }
    M::decode(data).map_err(TypeError::Decode)
}

/// How a subscription takes its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Each message is the subscription's own `T` (a copy when others also want it).
    Owned,
    /// Messages are `Arc<T>`s shared with the other sharing subscriptions (and the publisher).
    Shared,
}

/// Counters of a typed publisher.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PublisherStats {
    /// Messages published.
    pub published: u64,
    /// Deep copies (`T::clone`) the bus made of them for owning subscriptions.
    pub copies: u64,
    /// Messages encoded (for byte-level subscriptions, other Rust types of the same LCM type, or the transport).
    pub encoded: u64,
    /// Deliveries refused by keep-all subscriptions at their resource limit.
    pub limit_drops: u64,
    /// Subscriptions refused because this publisher's QoS could not serve them.
    pub incompatible_qos: u64,
    /// Subscriptions refused because they take another message type on this channel.
    pub incompatible_type: u64,
    /// Typed subscriptions of this bus on the channel now.
    pub matched: usize,
    /// Messages in the transient-local store now.
    pub stored: usize,
}

/// What decoding for a group of typed subscriptions gives: one item per owning subscription, and the value shared
/// by the sharing ones.
type Decoded = (Vec<Item>, Option<Arc<dyn Any + Send + Sync>>);

/// An encoding of a type-erased `T`: `None` when the value is not a `T`.
type ErasedEncode = Option<Result<Vec<u8>, EncodeError>>;

/// Type-erased operations on one message type `T`, for paths that do not know `T` statically (bytes from the
/// transport, a transient-local store read by another Rust type).
#[derive(Clone, Copy)]
pub(crate) struct Ops {
    pub(crate) type_id: TypeId,
    /// Decodes and hands the value to `owners` owning and `sharers` sharing subscriptions (the copy tables of ROS 2's
    /// intra-process design article).
    decode_distribute: fn(&[u8], usize, usize) -> Result<Decoded, TypeError>,
    /// Encodes a `T` (the `Any` must be a `T`).
    encode: fn(&(dyn Any + Send + Sync)) -> ErasedEncode,
    /// Copies a `T` into an owned item.
    copy: fn(&(dyn Any + Send + Sync)) -> Option<Box<dyn Any + Send>>,
}

fn decode_distribute<T: Message + Clone + Send + Sync + 'static>(
    data: &[u8],
    owners: usize,
    sharers: usize,
) -> Result<Decoded, TypeError> {
    let value = decode_as::<T>(data)?;
    let d = distribute(Msg::Owned(value), owners, sharers);
    let owned = d.owned.into_iter().map(|t| Item::Owned(Box::new(t))).collect();
    Ok((owned, d.shared.map(|a| a as Arc<dyn Any + Send + Sync>)))
}

fn encode_any<T: Message + 'static>(v: &(dyn Any + Send + Sync)) -> ErasedEncode {
    (v as &dyn Any).downcast_ref::<T>().map(Message::encode)
}

fn copy_any<T: Clone + Send + 'static>(v: &(dyn Any + Send + Sync)) -> Option<Box<dyn Any + Send>> {
    (v as &dyn Any).downcast_ref::<T>().map(|t| Box::new(t.clone()) as Box<dyn Any + Send>)
}

impl Ops {
    pub(crate) fn of<T: Message + Clone + Send + Sync + 'static>() -> Ops {
        Ops {
            type_id: TypeId::of::<T>(),
            decode_distribute: decode_distribute::<T>,
            encode: encode_any::<T>,
            copy: copy_any::<T>,
        }
    }
}

/// What the bus knows of a typed publisher or subscription.
pub(crate) struct TypedInfo {
    pub(crate) channel: String,
    pub(crate) fingerprint: u64,
    pub(crate) type_id: TypeId,
    pub(crate) type_name: &'static str,
    pub(crate) take: Take,
    pub(crate) qos: Qos,
    pub(crate) ops: Ops,
}

impl TypedInfo {
    pub(crate) fn of<T: Message + Clone + Send + Sync + 'static>(channel: &str, qos: Qos, take: Take) -> TypedInfo {
        TypedInfo {
            channel: channel.to_owned(),
            fingerprint: T::FINGERPRINT,
            type_id: TypeId::of::<T>(),
            type_name: T::TYPE_NAME,
            take,
            qos,
            ops: Ops::of::<T>(),
        }
    }
}

/// Decodes `data` once for a group of typed subscriptions of one Rust type and makes their items; on a decode
/// error (wrong fingerprint, corrupt) every member is listed in `failed` instead.
pub(crate) fn decode_group(g: &DecodeGroup, data: &[u8], items: &mut Vec<(Target, Item)>, failed: &mut Vec<Target>) {
    let owners = g.members.iter().filter(|t| t.take == Take::Owned).count();
    let sharers = g.members.len() - owners;
    match (g.ops.decode_distribute)(data, owners, sharers) {
        Ok((owned, shared)) => assign(&g.members, owned, shared, items),
        Err(_) => failed.extend(g.members.iter().copied()),
    }
}

/// Pairs each target with its item: owning targets take the owned items in order, sharing ones the shared value.
pub(crate) fn assign(
    targets: &[Target],
    owned: Vec<Item>,
    shared: Option<Arc<dyn Any + Send + Sync>>,
    items: &mut Vec<(Target, Item)>,
) {
    let mut owned = owned.into_iter();
    for t in targets {
        let item = match t.take {
            Take::Owned => owned.next(),
            Take::Shared => shared.as_ref().map(|a| Item::Shared(Arc::clone(a))),
        };
        if let Some(item) = item {
            items.push((*t, item));
        }
    }
}

/// The item a late-joining subscription gets for one stored message of a transient-local publisher: the stored
/// `Arc` itself when it shares, a copy when it owns (the store keeps its own), through the encoding when it is
/// another Rust type of the same LCM type. `None` if the message cannot be converted.
pub(crate) fn stored_item(msg: &Arc<dyn Any + Send + Sync>, from: Ops, to: Ops, take: Take) -> Option<Item> {
    if from.type_id == to.type_id {
        return match take {
            Take::Shared => Some(Item::Shared(Arc::clone(msg))),
            Take::Owned => (to.copy)(msg.as_ref()).map(Item::Owned),
        };
    }
    let bytes = (from.encode)(msg.as_ref())?.ok()?;
    let (owned, shared) = match take {
        Take::Owned => (to.decode_distribute)(&bytes, 1, 0).ok()?,
        Take::Shared => (to.decode_distribute)(&bytes, 0, 1).ok()?,
    };
    match take {
        Take::Owned => owned.into_iter().next(),
        Take::Shared => shared.map(Item::Shared),
    }
}
