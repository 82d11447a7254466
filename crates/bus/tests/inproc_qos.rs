//! QoS of typed in-process publishers and subscriptions (crate::qos): the keep-last ring, the keep-all limit (reported,
//! never silent), transient-local late joiners (stored messages first, in publish order), ROS 2's compatibility rule
//! and type matching (refused when the second of a pair is created, counted in the first), what a transport that
//! cannot honour a policy says, and that typed and byte-level publishers and subscriptions all reach each other.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{inproc_bus, udpm_url, Counted, Other};
use nerve_bus::{Bus, BusError, Overflow, Qos};
use nerve_codec::{Decode, DecodeError, Encode, EncodeError, Message, Reader, Writer};

fn tags<M: std::ops::Deref<Target = Counted>>(got: impl IntoIterator<Item = M>) -> Vec<u8> {
    got.into_iter().map(|m| m.data[0]).collect()
}

fn drain<M>(q: &nerve_bus::TypedSubscriber<M>) -> Vec<M> {
    std::iter::from_fn(|| q.try_recv()).take(1000).collect()
}

#[test]
fn keep_last_is_a_ring() {
    let bus = inproc_bus("qos-ring");
    let sub = bus.subscriber_shared::<Counted>("RING", Qos::keep_last(3)).unwrap();
    let p = bus.publisher::<Counted>("RING", Qos::default()).unwrap();
    for i in 1..=5 {
        p.publish(Counted::new(i, 1)).unwrap();
    }
    assert_eq!(tags(drain(&sub)), [3, 4, 5], "the oldest go");
    let s = sub.stats();
    assert_eq!((s.received, s.delivered, s.dropped_overflow, s.dropped_limit), (5, 3, 2, 0));
}

#[test]
fn keep_all_limit_is_reported() {
    let bus = inproc_bus("qos-limit");
    // Best effort: counted, publish succeeds; the messages kept are the first ones (keep-all loses nothing it took).
    let be = bus.subscriber_owned::<Counted>("ALL", Qos::keep_all(3)).unwrap();
    let p = bus.publisher::<Counted>("ALL", Qos::default().reliable()).unwrap();
    for i in 1..=5 {
        p.publish(Counted::new(i, 1)).unwrap();
    }
    assert_eq!(drain(&be).iter().map(|m| m.data[0]).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!((be.stats().dropped_limit, be.stats().dropped_overflow), (2, 0));
    assert_eq!(p.stats().limit_drops, 2);

    // Reliable: the publisher gets an error naming the channel and limit; everyone else still got the message.
    let rel = bus.subscriber_owned::<Counted>("ALL", Qos::keep_all(2).reliable()).unwrap();
    let other = bus.subscriber_shared::<Counted>("ALL", Qos::keep_last(10)).unwrap();
    p.publish(Counted::new(6, 1)).unwrap();
    p.publish(Counted::new(7, 1)).unwrap();
    match p.publish(Counted::new(8, 1)) {
        Err(BusError::LimitReached { channel, subscriptions: 1, limit: 2 }) => assert_eq!(channel, "ALL"),
        other => panic!("expected LimitReached, got {other:?}"),
    }
    assert_eq!(tags(drain(&other)), [6, 7, 8]);
    assert_eq!(drain(&rel).iter().map(|m| m.data[0]).collect::<Vec<_>>(), [6, 7]);
    assert_eq!(rel.stats().dropped_limit, 1);
    // Room again: publishing works again.
    p.publish(Counted::new(9, 1)).unwrap();
}

#[test]
fn transient_local_late_joiners_get_the_store_in_publish_order() {
    let bus = inproc_bus("qos-tl");
    let a = bus.publisher::<Counted>("TL", Qos::default().transient_local(3)).unwrap();
    let b = bus.publisher::<Counted>("TL", Qos::default().transient_local(2)).unwrap();
    // Interleaved: a1 b1 a2 b2 a3 b3 a4 (tags: a = 10+i, b = 20+i).
    for i in 1..=3 {
        a.publish(Counted::new(10 + i, 1)).unwrap();
        b.publish(Counted::new(20 + i, 1)).unwrap();
    }
    a.publish(Counted::new(14, 1)).unwrap();
    assert_eq!((a.stats().stored, b.stats().stored), (3, 2));

    // a keeps a2 a3 a4, b keeps b2 b3: merged in publish order.
    let late = bus.subscriber_shared::<Counted>("TL", Qos::keep_last(10).transient_local(10)).unwrap();
    assert_eq!(tags(drain(&late)), [12, 22, 13, 23, 14]);
    // A late joiner takes at most its own depth: the newest of the merged store.
    let short = bus.subscriber_owned::<Counted>("TL", Qos::keep_last(10).transient_local(2)).unwrap();
    assert_eq!(drain(&short).iter().map(|m| m.data[0]).collect::<Vec<_>>(), [23, 14]);
    // A volatile one gets nothing from before it existed.
    let volatile = bus.subscriber_shared::<Counted>("TL", Qos::keep_last(10)).unwrap();
    assert!(volatile.try_recv().is_none());
    // Then live messages, once each.
    a.publish(Counted::new(15, 1)).unwrap();
    assert_eq!(tags(drain(&late)), [15]);
    assert_eq!(tags(drain(&volatile)), [15]);

    // Shared late joiners get the stored allocation itself.
    let s1 = bus.subscriber_shared::<Counted>("TL", Qos::keep_last(1).transient_local(1)).unwrap();
    let s2 = bus.subscriber_shared::<Counted>("TL", Qos::keep_last(1).transient_local(1)).unwrap();
    assert!(Arc::ptr_eq(&s1.try_recv().unwrap(), &s2.try_recv().unwrap()));
}

#[test]
fn a_callback_late_joiner_is_served_too() {
    let bus = inproc_bus("qos-tl-cb");
    let p = bus.publisher::<Counted>("TLC", Qos::default().transient_local(5)).unwrap();
    for i in 1..=3 {
        p.publish(Counted::new(i, 1)).unwrap();
    }
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let g = Arc::clone(&got);
    bus.subscribe_owned::<Counted>("TLC", Qos::default().transient_local(5), move |m: Counted| {
        g.lock().unwrap().push(m.data[0])
    })
    .unwrap();
    while bus.handle_timeout(Duration::ZERO).unwrap() {}
    assert_eq!(*got.lock().unwrap(), [1, 2, 3]);
}

#[test]
fn incompatible_qos_is_refused_and_counted() {
    let bus = inproc_bus("qos-compat");
    // Publisher first, then the subscription asking for more.
    let be = bus.publisher::<Counted>("R", Qos::default()).unwrap();
    match bus.subscriber_owned::<Counted>("R", Qos::default().reliable()) {
        Err(BusError::IncompatibleQos { channel, policy: "reliability", .. }) => assert_eq!(channel, "R"),
        other => panic!("expected IncompatibleQos, got {:?}", other.err()),
    }
    assert_eq!(be.stats().incompatible_qos, 1);
    // Subscription first, then the publisher offering less.
    let tl = bus.subscriber_shared::<Counted>("D", Qos::default().transient_local(1)).unwrap();
    assert!(matches!(
        bus.publisher::<Counted>("D", Qos::default()),
        Err(BusError::IncompatibleQos { policy: "durability", .. })
    ));
    assert_eq!(tl.stats().incompatible_qos, 1);
    // What is compatible stays compatible: a reliable transient-local publisher serves both kinds.
    let strong = bus.publisher::<Counted>("D", Qos::default().reliable().transient_local(1)).unwrap();
    let weak = bus.subscriber_shared::<Counted>("D", Qos::default()).unwrap();
    strong.publish(Counted::new(1, 1)).unwrap();
    assert!(tl.try_recv().is_some() && weak.try_recv().is_some());
    let err = bus.subscriber_owned::<Counted>("R", Qos::default().reliable()).err().unwrap().to_string();
    assert!(err.contains("channel R") && err.contains("reliable"), "{err}");
}

#[test]
fn a_wrong_type_is_refused_or_counted_never_delivered() {
    let bus = inproc_bus("qos-type");
    let sub = bus.subscriber_owned::<Counted>("T", Qos::default()).unwrap();
    match bus.publisher::<Other>("T", Qos::default()) {
        Err(BusError::TypeMismatch { wanted: "test.other_t", found: "test.counted_t", .. }) => {}
        other => panic!("expected TypeMismatch, got {other:?}"),
    }
    assert_eq!(sub.stats().incompatible_type, 1);
    // Bytes of another type on the channel (a raw publish, or another process) are a decode error, not a message.
    bus.publish("T", &Other { v: 5 }).unwrap();
    assert!(sub.try_recv().is_none());
    assert_eq!(sub.stats().decode_errors, 1);
    // And a subscription of another type than an existing publisher's is refused too.
    let _p = bus.publisher::<Other>("T2", Qos::default()).unwrap();
    assert!(matches!(bus.subscriber_shared::<Counted>("T2", Qos::default()), Err(BusError::TypeMismatch { .. })));
}

#[test]
fn udpm_says_what_it_cannot_do() {
    let bus = Bus::new(Some(&udpm_url(1))).unwrap();
    for (qos, policy) in
        [(Qos::default().reliable(), "reliable"), (Qos::default().transient_local(3), "transient_local")]
    {
        match bus.subscriber_shared::<Counted>("U", qos) {
            Err(e @ BusError::QosUnsupported { provider: "udpm", .. }) => {
                assert!(e.to_string().contains(policy), "{e}")
            }
            other => panic!("expected QosUnsupported, got {:?}", other.err()),
        }
    }
    assert!(matches!(bus.publisher::<Counted>("U", Qos::default().reliable()), Err(BusError::QosUnsupported { .. })));
    // A transient-local publisher is fine: its store serves late joiners of this process (remote processes cannot
    // ask for it; their transient-local subscriptions are refused as above).
    let p = bus.publisher::<Counted>("U", Qos::default().transient_local(2)).unwrap();
    p.publish(Counted::new(9, 1)).unwrap();
    let inproc = inproc_bus("qos-unsupported");
    assert!(inproc.subscriber_shared::<Counted>("U", Qos::keep_all(5).reliable().transient_local(3)).is_ok());
}

#[test]
fn zero_sizes_are_invalid() {
    let bus = inproc_bus("qos-invalid");
    assert!(matches!(bus.subscriber_owned::<Counted>("Z", Qos::keep_last(0)), Err(BusError::InvalidQos { .. })));
    assert!(matches!(
        bus.publisher::<Counted>("Z", Qos::default().transient_local(0)),
        Err(BusError::InvalidQos { .. })
    ));
}

/// The same LCM type as `Counted`, as a second Rust type (e.g. generated twice in different crates).
#[derive(Debug, Clone, PartialEq)]
struct Twin {
    data: Vec<u8>,
}

impl Encode for Twin {
    fn encoded_body_size(&self) -> usize {
        4 + self.data.len()
    }
    fn encode_body(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        w.put_i32(self.data.len() as i32)?;
        w.put_bytes(&self.data)
    }
}

impl Decode for Twin {
    fn decode_body(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.get_i32()?;
        let n = r.count(n as i64)?;
        Ok(Twin { data: r.get_bytes(n)?.to_vec() })
    }
}

impl Message for Twin {
    const FINGERPRINT: u64 = Counted::FINGERPRINT;
    const TYPE_NAME: &'static str = "test.counted_t";
}

#[test]
fn every_api_reaches_every_other() {
    let bus = inproc_bus("qos-apis");
    let raw = bus.subscriber("X", 10, Overflow::DropOldest).unwrap();
    let typed = bus.subscriber_owned::<Counted>("X", Qos::default()).unwrap();
    let twin = bus.subscriber_shared::<Twin>("X", Qos::default()).unwrap();
    let p = bus.publisher::<Counted>("X", Qos::default()).unwrap();

    // A typed publication: encoded once for the byte-level subscription and the other Rust type.
    p.publish(Counted::new(4, 3)).unwrap();
    assert_eq!(Counted::decode(&raw.try_recv().unwrap().data).unwrap(), Counted::new(4, 3));
    assert_eq!(typed.try_recv().unwrap(), Counted::new(4, 3));
    assert_eq!(twin.try_recv().unwrap().data, [4, 4, 4]);
    assert_eq!(p.stats().encoded, 1);

    // A raw publication: typed subscriptions get it decoded.
    bus.publish_raw("X", &Counted::new(5, 2).encode().unwrap()).unwrap();
    assert_eq!(typed.try_recv().unwrap(), Counted::new(5, 2));
    assert_eq!(twin.try_recv().unwrap().data, [5, 5]);
    assert_eq!(raw.try_recv().unwrap().channel, "X");

    // With only typed subscriptions of its own type and no transport, nothing is encoded.
    drop((raw, twin));
    p.publish(Counted::new(6, 1)).unwrap();
    assert_eq!(p.stats().encoded, 1);
    assert_eq!(typed.try_recv().unwrap(), Counted::new(6, 1));
}
