//! The copy tables of ROS 2's intra-process design article ("Number of message copies"), as one pure function: given a
//! published message (owned or shared) and how many matching subscriptions take it owned and how many shared, make
//! exactly the copies that ownership requires and no other.
//!
//! Publishing an owned message to `O` owning and `S` sharing subscriptions:
//!
//! - `S = 0`: `O - 1` copies; the first owning subscription gets the original (the article's `@1`).
//! - `O = 0`: no copy; the original becomes one shared allocation for every sharing subscription.
//! - `O >= 1`, `S >= 1`: `O` copies: one shared by all sharing subscriptions, `O - 1` for the owning ones after the
//!   first, which gets the original. (For `S = 1` the article words this as "equivalent to everyone owning: N - 1
//!   copies"; it is the same count and the same addresses.)
//!
//! Publishing a shared message: every sharing subscription gets the published allocation itself, every owning one a
//! copy of its own (`O` copies).
//!
//! A "copy" is a call of `T::clone`: a deep copy of the message. Moving a value in Rust relocates only its inline
//! bytes (for a message worth sharing: a few pointers and lengths) and never its heap data, so it is not a copy;
//! the test `tests/inproc_copies.rs` checks the addresses of the heap data and counts the clones.
//!
//! One difference from ROS 2 makes the tables hold on every transport: when the same publication also goes to
//! another process, ROS 2 must turn the owned message into a shared one (a copy for each owning subscription)
//! because its middleware needs the message after the owners took it. Here the bytes for the transport are encoded
//! from a borrow before any subscription takes the message, so sending to other processes costs an encoding, never
//! an extra copy.

use std::sync::Arc;

/// A message as a publisher hands it over.
#[derive(Debug)]
pub enum Msg<T> {
    /// Owned ("unique"): the bus may give this very value to one owning subscription.
    Owned(T),
    /// Shared: the publisher (and others) may still hold it.
    Shared(Arc<T>),
}

/// What each subscription gets.
#[derive(Debug)]
pub struct Delivery<T> {
    /// One value per owning subscription, in subscription order.
    pub owned: Vec<T>,
    /// The allocation every sharing subscription gets (present when there is at least one).
    pub shared: Option<Arc<T>>,
    /// How many times `T::clone` was called.
    pub copies: u64,
}

/// Hands `msg` to `owners` owning and `sharers` sharing subscriptions, with the fewest copies (see the module doc).
pub fn distribute<T: Clone>(msg: Msg<T>, owners: usize, sharers: usize) -> Delivery<T> {
    let mut copies = 0u64;
    let mut copy = |t: &T| {
        copies += 1;
        t.clone()
    };
    let (owned, shared) = match msg {
        Msg::Owned(original) => {
            if owners == 0 {
                (Vec::new(), (sharers > 0).then(|| Arc::new(original)))
            } else {
                let shared = (sharers > 0).then(|| Arc::new(copy(&original)));
                let mut owned = Vec::with_capacity(owners);
                // Copies first, from the original, which then moves to the first owning subscription.
                let rest: Vec<T> = (1..owners).map(|_| copy(&original)).collect();
                owned.push(original);
                owned.extend(rest);
                (owned, shared)
            }
        }
        Msg::Shared(arc) => {
            let owned = (0..owners).map(|_| copy(&arc)).collect();
            (owned, (sharers > 0).then_some(arc))
        }
    };
    Delivery { owned, shared, copies }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Counted(u32);

    impl Clone for Counted {
        fn clone(&self) -> Counted {
            Counted(self.0 + 1)
        }
    }

    #[test]
    fn counts_follow_the_seed() {
        // (owners, sharers) -> copies, for an owned publish and for a shared one.
        for (o, s, owned_copies, shared_copies) in [
            (1, 0, 0, 1),
            (2, 0, 1, 2),
            (0, 1, 0, 0),
            (0, 2, 0, 0),
            (1, 1, 1, 1),
            (1, 2, 1, 1),
            (2, 2, 2, 2),
            (3, 1, 3, 3),
        ] {
            let d = distribute(Msg::Owned(Counted(0)), o, s);
            assert_eq!((d.owned.len(), d.shared.is_some(), d.copies), (o, s > 0, owned_copies), "owned {o} {s}");
            let d = distribute(Msg::Shared(Arc::new(Counted(0))), o, s);
            assert_eq!((d.owned.len(), d.shared.is_some(), d.copies), (o, s > 0, shared_copies), "shared {o} {s}");
        }
        // The original goes to the first owning subscription.
        let d = distribute(Msg::Owned(Counted(0)), 3, 0);
        assert_eq!(d.owned, [Counted(0), Counted(1), Counted(1)]);
        let d = distribute(Msg::Owned(Counted(7)), 0, 0);
        assert_eq!((d.owned.len(), d.shared.is_none(), d.copies), (0, true, 0));
    }
}
