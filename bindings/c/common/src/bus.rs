//! [`BusHandle`] and [`SubHandle`]: a bus and its callback subscriptions as a C library holds them (libnerve's
//! `nerve_bus`, liblcm's `lcm_t`), so both map their C API onto one implementation of the bookkeeping: which
//! subscriptions belong to which bus, closing a bus ends its subscriptions, and a subscription is refused by another
//! bus. Each library keeps its own [`Registry`] of each (its handles are its own types to C) and its own handler
//! shape (the C function it calls and what it passes).

use std::sync::{Mutex, PoisonError};

use nerve_bus::{Bus, BusError, Overflow, Received, Subscription, TypeError};

use crate::Registry;

/// One open bus and the subscriptions made on it (their registry addresses).
pub struct BusHandle {
    /// The bus.
    pub bus: Bus,
    subscriptions: Mutex<Vec<usize>>,
}

/// One callback subscription.
pub struct SubHandle {
    /// The address of the [`BusHandle`] it was made on.
    pub owner: usize,
    /// That bus (a clone), for stats and capacity changes without the owner.
    pub bus: Bus,
    /// The bus's subscription.
    pub subscription: Subscription,
}

/// Why [`BusHandle::unsubscribe`] refused.
#[derive(Debug)]
pub enum UnsubscribeError {
    /// Not a live subscription of this library.
    Unknown,
    /// A subscription of another bus.
    OtherBus,
    /// The bus refused.
    Bus(BusError),
}

impl BusHandle {
    /// A handle for `bus`.
    pub fn new(bus: Bus) -> BusHandle {
        BusHandle { bus, subscriptions: Mutex::new(Vec::new()) }
    }

    /// Subscribes `handler` to `pattern`; the new subscription goes into `registry`, as belonging to this handle
    /// (whose registry address is `this`).
    pub fn subscribe(
        &self,
        this: *const BusHandle,
        registry: &Registry<SubHandle>,
        pattern: &str,
        capacity: usize,
        overflow: Overflow,
        handler: impl FnMut(&Received) -> Result<(), TypeError> + Send + 'static,
    ) -> Result<*const SubHandle, BusError> {
        let subscription = self.bus.subscribe_with(pattern, capacity, overflow, handler)?;
        let ptr = registry.insert(SubHandle { owner: this as usize, bus: self.bus.clone(), subscription });
        self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner).push(ptr as usize);
        Ok(ptr)
    }

    /// Ends the subscription `sub` of this handle (`this`).
    pub fn unsubscribe(
        &self,
        this: *const BusHandle,
        registry: &Registry<SubHandle>,
        sub: *const SubHandle,
    ) -> Result<(), UnsubscribeError> {
        let found = registry.get(sub).ok_or(UnsubscribeError::Unknown)?;
        if found.owner != this as usize {
            return Err(UnsubscribeError::OtherBus);
        }
        registry.remove(sub);
        self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner).retain(|&s| s != sub as usize);
        self.bus.unsubscribe(&found.subscription).map_err(UnsubscribeError::Bus)
    }

    /// Ends every subscription of this handle (when it closes).
    pub fn unsubscribe_all(&self, registry: &Registry<SubHandle>) {
        let subs = std::mem::take(&mut *self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner));
        for s in subs {
            if let Some(sub) = registry.remove(s as *const SubHandle) {
                // Already gone from the bus is fine: the handle is closing.
                let _ = sub.bus.unsubscribe(&sub.subscription);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn subscriptions_belong_to_their_bus_and_end_with_it() {
        static BUSES: Registry<BusHandle> = Registry::new();
        static SUBS: Registry<SubHandle> = Registry::new();
        let a = BUSES.insert(BusHandle::new(Bus::new(Some("memq://")).unwrap()));
        let b = BUSES.insert(BusHandle::new(Bus::new(Some("memq://")).unwrap()));
        let (ha, hb) = (BUSES.get(a).unwrap(), BUSES.get(b).unwrap());
        let count = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&count);
        let s = ha
            .subscribe(a, &SUBS, "X", 0, Overflow::DropOldest, move |_| {
                c.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .unwrap();
        ha.bus.publish_raw("X", b"1").unwrap();
        assert!(ha.bus.handle_timeout(Duration::from_secs(1)).unwrap());
        assert_eq!(count.load(Ordering::Relaxed), 1);
        assert!(matches!(hb.unsubscribe(b, &SUBS, s), Err(UnsubscribeError::OtherBus)));
        ha.unsubscribe_all(&SUBS);
        assert!(SUBS.get(s).is_none());
        assert!(matches!(ha.unsubscribe(a, &SUBS, s), Err(UnsubscribeError::Unknown)));
        ha.bus.publish_raw("X", b"2").unwrap();
        assert!(!ha.bus.handle_timeout(Duration::from_millis(50)).unwrap());
        assert_eq!(count.load(Ordering::Relaxed), 1);
    }
}
