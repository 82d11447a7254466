//! The way a message goes into the queues: `plan` then `commit` for a typed publication, `route_bytes` for encoded
//! bytes (from the transport, or a raw publish), and [`Hub::publish`], which raw and typed publishing both call.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::sync::Arc;

use super::{erased, Hub, Item, Ops, Origin, Pushed, Received, Take, Wake};
use crate::error::BusError;

/// A subscription a publication is for, as found when it was planned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target {
    pub(super) id: u64,
    pub(super) index: usize,
    pub(crate) take: Take,
    pub(super) reliable: bool,
}

/// Typed subscriptions of one Rust type that need the encoded bytes (they are not of the publisher's type).
pub(crate) struct DecodeGroup {
    pub(crate) ops: Ops,
    pub(crate) members: Vec<Target>,
}

/// Who a publication on a channel goes to.
pub(crate) struct Plan {
    /// Typed subscriptions of the publisher's own type, in subscription order.
    pub(crate) own: Vec<Target>,
    /// Other typed subscriptions, by type.
    pub(crate) groups: Vec<DecodeGroup>,
    /// Whether any byte-level subscription matches.
    pub(crate) byte_subs: bool,
}

/// What `commit` reports back to a publisher.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Committed {
    /// Keep-all subscriptions that refused the message at their limit.
    pub(crate) refused: usize,
    /// Of those, the reliable ones.
    pub(crate) refused_reliable: usize,
    /// The smallest limit among the reliable refusals.
    pub(crate) limit: usize,
}

/// A typed publication, prepared by its publisher from a [`Plan`]: what each subscription gets.
pub(crate) struct Prepared {
    /// Typed subscriptions and their items.
    pub(crate) items: Vec<(Target, Item)>,
    /// The encoded message for every matching byte-level subscription, if any matches.
    pub(crate) received: Option<Arc<Received>>,
    /// Typed subscriptions of other Rust types the bytes did not decode for.
    pub(crate) failed: Vec<Target>,
    /// The publisher, and the copies and encodings the publication took, for its stats.
    pub(crate) publisher: (u64, u64, bool),
}

/// What a publication delivers inside this process (see [`Hub::publish`]).
pub(crate) enum Local<'a> {
    /// Encoded bytes (a raw publish), routed as bytes from the transport are.
    Bytes(&'a [u8]),
    /// A typed publication.
    Typed(Prepared),
}

impl Hub {
    /// Finds who a publication on `channel` goes to. `own_type` is the typed publisher's type (its subscriptions are
    /// served the value itself); `history` is stored in that publisher's transient-local store in the same critical
    /// section, so that a subscription joining concurrently gets the message exactly once: from the store or live.
    pub(crate) fn plan(
        &self,
        channel: &str,
        own_type: Option<TypeId>,
        history: Option<(u64, Arc<dyn Any + Send + Sync>)>,
    ) -> Plan {
        let mut st = self.lock();
        if let Some((pub_id, msg)) = history {
            st.publish_seq += 1;
            let seq = st.publish_seq;
            if let Some(p) = st.pubs.iter_mut().find(|p| p.id == pub_id) {
                let depth = p.info.qos.transient_depth().unwrap_or(0);
                if p.history.len() >= depth {
                    p.history.pop_front();
                }
                p.history.push_back((seq, msg));
            }
        }
        let matching = st.matching(channel);
        if matching.is_empty() && own_type.is_none() {
            st.unmatched += 1;
        }
        let mut plan = Plan { own: Vec::new(), groups: Vec::new(), byte_subs: false };
        for &i in matching.iter() {
            let s = &st.subs[i];
            let Some(t) = &s.typed else {
                plan.byte_subs = true;
                continue;
            };
            let target = Target { id: s.id, index: i, take: t.take, reliable: t.qos.is_reliable() };
            if Some(t.type_id) == own_type {
                plan.own.push(target);
            } else if let Some(g) = plan.groups.iter_mut().find(|g| g.ops.type_id == t.type_id) {
                g.members.push(target);
            } else {
                plan.groups.push(DecodeGroup { ops: t.ops, members: vec![target] });
            }
        }
        plan
    }

    /// Pushes the planned items (and, to every matching byte-level subscription, `received`) into the queues, as
    /// one arrival. `decode_failed` are typed subscriptions the bytes did not decode for. `publisher` is the typed
    /// publisher's id and the copies it took, for its stats.
    fn commit(
        &self,
        channel: &str,
        items: Vec<(Target, Item)>,
        received: Option<Arc<Received>>,
        decode_failed: &[Target],
        publisher: Option<(u64, u64, bool)>,
    ) -> Committed {
        let mut wake = Wake::default();
        let mut done = Committed { limit: usize::MAX, ..Committed::default() };
        {
            let mut st = self.lock();
            st.arrivals += 1;
            let arrival = st.arrivals;
            for (t, item) in items {
                let Some(i) = st.find(t.index, t.id) else { continue };
                if self.enqueue(&mut st, i, arrival, item, &mut wake) == Pushed::Refused {
                    done.refused += 1;
                    if t.reliable {
                        done.refused_reliable += 1;
                        done.limit = done.limit.min(st.subs[i].capacity);
                    }
                }
            }
            for t in decode_failed {
                if let Some(i) = st.find(t.index, t.id) {
                    st.subs[i].stats.received += 1;
                    st.subs[i].stats.decode_errors += 1;
                }
            }
            if let Some(r) = received {
                for &i in st.matching(channel).iter() {
                    if st.subs[i].typed.is_none() {
                        self.enqueue(&mut st, i, arrival, Item::Bytes(Arc::clone(&r)), &mut wake);
                    }
                }
            }
            if let Some((id, copies, encoded)) = publisher {
                if let Some(p) = st.pubs.iter_mut().find(|p| p.id == id) {
                    p.stats.published += 1;
                    p.stats.copies += copies;
                    p.stats.encoded += encoded as u64;
                    p.stats.limit_drops += done.refused as u64;
                }
            }
        }
        self.finish(wake);
        done
    }

    /// Delivers encoded bytes (from the transport, or a raw publish of this bus) to this bus's subscriptions:
    /// byte-level ones get them shared, typed ones a decoded value (decoded once per Rust type).
    ///
    /// When only byte-level subscriptions match (every message the transport brings to a process that subscribes
    /// bytes), matching and queueing are one critical section, and the channel and bytes move into the shared
    /// [`Received`] uncopied: this is the path between a datagram's arrival and its callback.
    pub(crate) fn route_bytes(&self, channel: Cow<'_, str>, data: Cow<'_, [u8]>, recv_utime: i64, origin: Origin) {
        {
            let mut st = self.lock();
            let matching = st.matching(&channel);
            if matching.is_empty() {
                st.unmatched += 1;
                return;
            }
            if matching.iter().all(|&i| st.subs[i].typed.is_none()) {
                let received =
                    Arc::new(Received { channel: channel.into_owned(), data: data.into_owned(), recv_utime, origin });
                let mut wake = Wake::default();
                st.arrivals += 1;
                let arrival = st.arrivals;
                for &i in matching.iter() {
                    self.enqueue(&mut st, i, arrival, Item::Bytes(Arc::clone(&received)), &mut wake);
                }
                drop(st);
                self.finish(wake);
                return;
            }
        }
        // Typed subscriptions match: decode outside the lock, then queue everything as one arrival.
        let plan = self.plan(&channel, None, None);
        let mut items = Vec::new();
        let mut failed = Vec::new();
        for g in &plan.groups {
            erased::decode_group(g, &data, &mut items, &mut failed);
        }
        if items.is_empty() && failed.is_empty() && !plan.byte_subs {
            return;
        }
        let received = plan
            .byte_subs
            .then(|| Arc::new(Received { channel: channel.to_string(), data: data.into_owned(), recv_utime, origin }));
        self.commit(&channel, items, received, &failed, None);
    }

    /// Publishes one message: delivers it to this bus's own subscriptions first, then hands `wire` (its encoding)
    /// to the transport if the transport can reach anyone outside this bus. Raw and typed publishing both come
    /// here, so they agree on that order. A transport error is returned after the in-process delivery happened.
    pub(crate) fn publish(&self, channel: &str, local: Local<'_>, wire: Option<&[u8]>) -> Result<Committed, BusError> {
        let done = match local {
            Local::Bytes(data) => {
                self.deliver_bytes(channel, data, nerve_codec::now_utime());
                Committed::default()
            }
            Local::Typed(p) => self.commit(channel, p.items, p.received, &p.failed, Some(p.publisher)),
        };
        self.wake_local_dispatch();
        if let Some(bytes) = wire {
            if self.provider.leaves_process() {
                self.provider.publish(channel, bytes)?;
            }
        }
        Ok(done)
    }

    /// Delivers bytes published through this bus to its own subscriptions only (the in-process half of
    /// [`Hub::publish`], for a batch whose sends the caller makes at once).
    pub(crate) fn deliver_bytes(&self, channel: &str, data: &[u8], recv_utime: i64) {
        self.route_bytes(Cow::Borrowed(channel), Cow::Borrowed(data), recv_utime, Origin::Local);
    }
}
