//! Seed 003's two copy tables ("Publishing UniquePtr", "Publishing SharedPtr"), every row, reproduced with a message
//! type whose `Clone` counts itself: for each row, the subscriptions are created in the row's order, one message is
//! published, and each subscription's message is labelled by where its data lives: `@1` is the published message's
//! own storage, `@2`, `@3`... new storage in order of first appearance. The labels must be the table's, the number
//! of clones the number of new labels, and sharing subscriptions must hold the very same `Arc`.
//!
//! The rows run on an `inproc://` bus and again on a udpm bus (where the message also goes to other processes,
//! encoded from a borrow): the tables hold on every transport.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{clones, inproc_bus, udpm_url, Counted};
use nerve_bus::{Bus, Qos, Take, TypedSubscriber};

/// How it is published.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Publish {
    Unique,
    Shared,
}

use Take::{Owned as U, Shared as S};

/// Seed 003, "Publishing UniquePtr": (subscriptions, result labels).
const UNIQUE_TABLE: &[(&[Take], &[u8])] = &[
    (&[U], &[1]),
    (&[U, U], &[1, 2]),
    (&[S], &[1]),
    (&[S, S], &[1, 1]),
    (&[U, S], &[1, 2]),
    (&[U, S, S], &[1, 2, 2]),
    (&[U, U, S, S], &[1, 2, 3, 3]),
];

/// Seed 003, "Publishing SharedPtr".
const SHARED_TABLE: &[(&[Take], &[u8])] = &[
    (&[U], &[2]),
    (&[U, U], &[2, 3]),
    (&[S], &[1]),
    (&[S, S], &[1, 1]),
    (&[U, S], &[2, 1]),
    (&[U, S, S], &[2, 1, 1]),
    (&[U, U, S, S], &[2, 3, 1, 1]),
];

enum Sub {
    Owned(TypedSubscriber<Counted>),
    Shared(TypedSubscriber<Arc<Counted>>),
}

/// What one subscription received: its data's address, and the `Arc` when shared.
enum Got {
    Owned(Counted),
    Shared(Arc<Counted>),
}

impl Got {
    fn addr(&self) -> usize {
        match self {
            Got::Owned(c) => c.addr(),
            Got::Shared(a) => a.addr(),
        }
    }
}

/// Labels addresses as the seed does: `@1` for the published storage, then 2, 3... by first appearance.
fn labels(original: usize, addrs: &[usize]) -> Vec<u8> {
    let mut seen: Vec<usize> = vec![original];
    addrs
        .iter()
        .map(|a| match seen.iter().position(|s| s == a) {
            Some(i) => i as u8 + 1,
            None => {
                seen.push(*a);
                seen.len() as u8
            }
        })
        .collect()
}

fn run_row(bus: &Bus, channel: &str, how: Publish, subs_spec: &[Take], expected: &[u8]) {
    let subs: Vec<Sub> = subs_spec
        .iter()
        .map(|t| match t {
            Take::Owned => Sub::Owned(bus.subscriber_owned::<Counted>(channel, Qos::keep_last(4)).unwrap()),
            Take::Shared => Sub::Shared(bus.subscriber_shared::<Counted>(channel, Qos::keep_last(4)).unwrap()),
        })
        .collect();
    let publisher = bus.publisher::<Counted>(channel, Qos::keep_last(4)).unwrap();
    let msg = Counted::new(7, 4096);
    let original = msg.addr();
    let before = clones();
    let published_arc = match how {
        Publish::Unique => {
            publisher.publish(msg).unwrap();
            None
        }
        Publish::Shared => {
            let arc = Arc::new(msg);
            publisher.publish_shared(Arc::clone(&arc)).unwrap();
            Some(arc)
        }
    };
    let copies = clones() - before;
    let got: Vec<Got> = subs
        .iter()
        .map(|s| match s {
            Sub::Owned(q) => Got::Owned(q.recv_timeout(Duration::from_secs(5)).expect("a message")),
            Sub::Shared(q) => Got::Shared(q.recv_timeout(Duration::from_secs(5)).expect("a message")),
        })
        .collect();
    let row = format!("{how:?} to {subs_spec:?} on {}", bus.provider_name());
    let addrs: Vec<usize> = got.iter().map(Got::addr).collect();
    assert_eq!(labels(original, &addrs), expected, "{row}: addresses {addrs:x?}, published @1 = {original:x}");
    let new_storage = expected.iter().filter(|&&l| l != 1).collect::<std::collections::BTreeSet<_>>().len() as u64;
    assert_eq!(copies, new_storage, "{row}: clones");
    assert_eq!(publisher.stats().copies, copies, "{row}: the publisher's own count");
    // Every message has the published content, and the sharing subscriptions hold one allocation.
    assert!(got.iter().all(|g| match g {
        Got::Owned(c) => c.data == [7; 4096],
        Got::Shared(a) => a.data == [7; 4096],
    }));
    let shared: Vec<&Arc<Counted>> =
        got.iter().filter_map(|g| if let Got::Shared(a) = g { Some(a) } else { None }).collect();
    assert!(shared.windows(2).all(|w| Arc::ptr_eq(w[0], w[1])), "{row}: sharers share one Arc");
    if let (Some(p), Some(first)) = (&published_arc, shared.first()) {
        assert!(Arc::ptr_eq(p, first), "{row}: sharers get the published Arc itself");
    }
}

fn both_tables(bus: &Bus, prefix: &str) {
    for (n, (subs, expected)) in UNIQUE_TABLE.iter().enumerate() {
        run_row(bus, &format!("{prefix}_UNIQUE_{n}"), Publish::Unique, subs, expected);
    }
    for (n, (subs, expected)) in SHARED_TABLE.iter().enumerate() {
        run_row(bus, &format!("{prefix}_SHARED_{n}"), Publish::Shared, subs, expected);
    }
}

#[test]
fn seed_003_tables_in_process() {
    both_tables(&inproc_bus("copies"), "IP");
}

#[test]
fn seed_003_tables_when_the_message_also_leaves_the_process() {
    let bus = Bus::new(Some(&udpm_url(0))).unwrap();
    both_tables(&bus, "UDPM");
    assert!(bus.provider_stats().published >= 14, "every row's message also went out on udpm");
}

#[test]
fn callbacks_take_the_same_storage() {
    // The callback forms hand over exactly what the queue forms do: an owned message moves into the handler.
    let bus = inproc_bus("copies-callbacks");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    bus.subscribe_owned::<Counted>("CB", Qos::default(), move |m: Counted| s.lock().unwrap().push(m.addr())).unwrap();
    let publisher = bus.publisher::<Counted>("CB", Qos::default()).unwrap();
    let msg = Counted::new(1, 1000);
    let original = msg.addr();
    let before = clones();
    publisher.publish(msg).unwrap();
    assert!(bus.handle_timeout(Duration::from_secs(1)).unwrap());
    assert_eq!(clones() - before, 0);
    assert_eq!(*seen.lock().unwrap(), [original]);
}

#[test]
fn a_transient_local_publisher_follows_the_shared_table() {
    // It keeps every message as a shared Arc for late joiners, so an owned publish is promoted (not copied) and
    // owning subscriptions get copies, as ROS 2's intra-process design article says ("the do_intra_process_publish(...)
    // will always process a shared pointer").
    let bus = inproc_bus("copies-tl");
    let owner = bus.subscriber_owned::<Counted>("TL", Qos::keep_last(2)).unwrap();
    let sharer = bus.subscriber_shared::<Counted>("TL", Qos::keep_last(2)).unwrap();
    let publisher = bus.publisher::<Counted>("TL", Qos::keep_last(2).transient_local(2)).unwrap();
    let msg = Counted::new(3, 512);
    let original = msg.addr();
    let before = clones();
    publisher.publish(msg).unwrap();
    assert_eq!(clones() - before, 1);
    assert_ne!(owner.try_recv().unwrap().addr(), original);
    assert_eq!(sharer.try_recv().unwrap().addr(), original);
    assert_eq!(publisher.stats().stored, 1);
}
