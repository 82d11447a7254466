//! The native half of Nerve's `lcm.jar`: the static native methods of `lcm.lcm.NerveNative`, which put LCM's Java
//! API (`lcm.lcm.LCM`) on Nerve's bus, so every transport the bus has (`udpm://`, `shm://`, `inproc://`,
//! `memq://`, `file://`, ...) is open to Java and MATLAB programs written for LCM.
//!
//! # Brief overview
//!
//! A bus is a `long` handle: a key into [`BUSES`], never a pointer, so a closed, made-up or zero handle is refused
//! with `IllegalStateException`, never dereferenced. Every entry point runs inside [`EnvUnowned::with_env`], which
//! catches a panic before it could unwind into the JVM; the policy turns it into a `RuntimeException`, and the
//! errors this crate raises itself are thrown as the Java exception LCM's jar throws for the same mistake
//! (`NullPointerException`, `IllegalArgumentException`, `IOException`, `IllegalStateException`).
//!
//! Messages reach Java on a Java thread: the jar's reader thread calls `handle(bus, timeoutMs)`, which waits in
//! [`Bus::handle_timeout`]; the bus runs the subscriptions' callbacks on that same thread, and each callback only
//! copies the message into [`BATCH`] (a callback has no JNI environment). Once the bus returns, `handle` calls the
//! static `NerveNative.deliver(id, channel, data)` for each one, and the jar hands it to the `LCMSubscriber`.
//! Subscription ids are the jar's (one counter for every `LCM` in the JVM), so a message handled on one `LCM`'s
//! thread for another `LCM` on the same `inproc://` bus still goes to the right subscriber.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use jni::errors::{Error as JniError, ThrowRuntimeExAndDefault};
use jni::objects::{JByteArray, JClass, JString};
use jni::refs::IntoAuto;
use jni::strings::{JNIStr, JNIString};
use jni::sys::{jint, jlong};
use jni::{jni_mangle, jni_sig, jni_str, Env, EnvUnowned, JValue};
use nerve_bus::{Bus, BusError, Overflow, Received, Subscription, DEFAULT_CAPACITY};

/// One open bus and the subscriptions the jar made on it (by the jar's subscription id).
struct Instance {
    bus: Bus,
    subscriptions: Mutex<HashMap<jlong, Subscription>>,
}

/// Every open bus, by handle.
static BUSES: LazyLock<Mutex<HashMap<jlong, Arc<Instance>>>> = LazyLock::new(|| Mutex::new(HashMap::new()));
/// The next handle; handles are never reused, so a stale one cannot reach a newer bus.
static NEXT_HANDLE: Mutex<jlong> = Mutex::new(1);

thread_local! {
    /// The messages the callbacks run by this thread's `handle` call copied out: (subscription id, channel, data).
    static BATCH: RefCell<Vec<(jlong, String, Vec<u8>)>> = const { RefCell::new(Vec::new()) };
    /// Reused for the bytes of each publish (a Java byte[] region is copied out once, into this).
    static SCRATCH: RefCell<Vec<i8>> = const { RefCell::new(Vec::new()) };
}

const ILLEGAL_STATE: &JNIStr = jni_str!("java/lang/IllegalStateException");
const ILLEGAL_ARGUMENT: &JNIStr = jni_str!("java/lang/IllegalArgumentException");
const NULL_POINTER: &JNIStr = jni_str!("java/lang/NullPointerException");
const INDEX_OUT_OF_BOUNDS: &JNIStr = jni_str!("java/lang/IndexOutOfBoundsException");
const IO: &JNIStr = jni_str!("java/io/IOException");

/// Throws `class(message)` and returns the error that makes the caller return at once (the policy then sees the
/// pending exception and leaves it to Java).
fn throw<T>(env: &mut Env<'_>, class: &JNIStr, message: impl AsRef<str>) -> Result<T, JniError> {
    env.throw_new(class, JNIString::new(message))?;
    Err(JniError::JavaException)
}

/// A bus error as a Java exception: `IOException` (what LCM's `LCM(url)` and `publish` declare, so a program
/// written for LCM catches it), except a channel regex the bus cannot compile, `IllegalArgumentException`.
fn throw_bus<T>(env: &mut Env<'_>, what: &str, e: BusError) -> Result<T, JniError> {
    let class = if matches!(e, BusError::Pattern(_)) { ILLEGAL_ARGUMENT } else { IO };
    let mut message = format!("{what}: {e}");
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    throw(env, class, message)
}

fn instance(env: &mut Env<'_>, handle: jlong, what: &str) -> Result<Arc<Instance>, JniError> {
    let found = BUSES.lock().unwrap_or_else(PoisonError::into_inner).get(&handle).cloned();
    match found {
        Some(i) => Ok(i),
        None => {
            throw(env, ILLEGAL_STATE, format!("{what}: the LCM is closed (or the handle is not one of an open bus)"))
        }
    }
}

/// A Java string argument that must not be null.
fn string_arg(env: &mut Env<'_>, s: &JString<'_>, what: &str) -> Result<String, JniError> {
    if s.is_null() {
        return throw(env, NULL_POINTER, format!("{what} is null"));
    }
    s.try_to_string(env)
}

/// `long open(String url)`: opens a bus on `url` (null or "" for `NERVE_URL`, then `LCM_DEFAULT_URL`, then LCM's
/// default group); `IOException` for a URL the bus refuses or a transport that cannot start.
#[jni_mangle("lcm.lcm.NerveNative")]
pub fn open<'l>(mut env: EnvUnowned<'l>, _class: JClass<'l>, url: JString<'l>) -> jlong {
    env.with_env(|env| -> Result<jlong, JniError> {
        let url = if url.is_null() { None } else { Some(url.try_to_string(env)?) };
        let bus = match Bus::new(url.as_deref()) {
            Ok(b) => b,
            Err(e) => return throw_bus(env, &format!("LCM({})", url.as_deref().unwrap_or("")), e),
        };
        let mut next = NEXT_HANDLE.lock().unwrap_or_else(PoisonError::into_inner);
        let handle = *next;
        *next += 1;
        let instance = Instance { bus, subscriptions: Mutex::new(HashMap::new()) };
        BUSES.lock().unwrap_or_else(PoisonError::into_inner).insert(handle, Arc::new(instance));
        Ok(handle)
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// `void close(long bus)`: removes the bus's subscriptions (another `LCM` on the same `inproc://` bus keeps its
/// own) and closes it once the reader thread's `handle` in progress returns. `IllegalStateException` if it is not
/// open.
#[jni_mangle("lcm.lcm.NerveNative")]
pub fn close<'l>(mut env: EnvUnowned<'l>, _class: JClass<'l>, handle: jlong) {
    env.with_env(|env| -> Result<(), JniError> {
        let removed = BUSES.lock().unwrap_or_else(PoisonError::into_inner).remove(&handle);
        let Some(instance) = removed else {
            return throw(env, ILLEGAL_STATE, "close: the LCM is already closed");
        };
        let subscriptions = std::mem::take(&mut *instance.subscriptions.lock().unwrap_or_else(PoisonError::into_inner));
        for sub in subscriptions.values() {
            // NotSubscribed only: nothing is left to remove.
            let _ = instance.bus.unsubscribe(sub);
        }
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// `void publish(long bus, String channel, byte[] data, int offset, int length)`.
#[jni_mangle("lcm.lcm.NerveNative")]
pub fn publish<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    channel: JString<'l>,
    data: JByteArray<'l>,
    offset: jint,
    length: jint,
) {
    env.with_env(|env| -> Result<(), JniError> {
        let instance = instance(env, handle, "publish")?;
        let channel = string_arg(env, &channel, "publish: the channel")?;
        if data.is_null() {
            return throw(env, NULL_POINTER, "publish: the data is null");
        }
        let size = data.len(env)?;
        let (Ok(start), Ok(len)) = (usize::try_from(offset), usize::try_from(length)) else {
            return throw(env, INDEX_OUT_OF_BOUNDS, format!("publish: offset {offset}, length {length}"));
        };
        if start.checked_add(len).is_none_or(|end| end > size) {
            return throw(
                env,
                INDEX_OUT_OF_BOUNDS,
                format!("publish: offset {offset} + length {length} is past the array's {size} bytes"),
            );
        }
        SCRATCH.with(|scratch| {
            let mut buf = scratch.borrow_mut();
            buf.clear();
            buf.resize(len, 0);
            data.get_region(env, offset, &mut buf)?;
            match instance.bus.publish_raw(&channel, bytemuck::cast_slice(&buf)) {
                Ok(()) => Ok(()),
                Err(e) => throw_bus(env, &format!("publish on {channel:?}"), e),
            }
        })
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// `void subscribe(long bus, String regex, long id)`: messages on every channel that `regex` matches in full are
/// delivered as subscription `id` by the `handle` calls. The queue is LCM's 30 messages, dropping the oldest when a
/// subscriber falls that far behind (bindings/java/README.md lists where this jar differs from LCM's).
#[jni_mangle("lcm.lcm.NerveNative")]
pub fn subscribe<'l>(mut env: EnvUnowned<'l>, _class: JClass<'l>, handle: jlong, regex: JString<'l>, id: jlong) {
    env.with_env(|env| -> Result<(), JniError> {
        let instance = instance(env, handle, "subscribe")?;
        let regex = string_arg(env, &regex, "subscribe: the channel regex")?;
        let on_message = move |m: &Received| {
            BATCH.with(|b| b.borrow_mut().push((id, m.channel.clone(), m.data.clone())));
            Ok(())
        };
        match instance.bus.subscribe_with(&regex, DEFAULT_CAPACITY, Overflow::DropOldest, on_message) {
            Ok(sub) => {
                instance.subscriptions.lock().unwrap_or_else(PoisonError::into_inner).insert(id, sub);
                Ok(())
            }
            Err(e) => throw_bus(env, &format!("subscribe({regex:?})"), e),
        }
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// `void unsubscribe(long bus, long id)`: no more messages for subscription `id` (none is delivered after this
/// returns, even one already queued). An id that is not subscribed is ignored.
#[jni_mangle("lcm.lcm.NerveNative")]
pub fn unsubscribe<'l>(mut env: EnvUnowned<'l>, _class: JClass<'l>, handle: jlong, id: jlong) {
    env.with_env(|env| -> Result<(), JniError> {
        let instance = instance(env, handle, "unsubscribe")?;
        let removed = instance.subscriptions.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        if let Some(sub) = removed {
            if let Err(e) = instance.bus.unsubscribe(&sub) {
                return throw_bus(env, "unsubscribe", e);
            }
        }
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// `int handle(long bus, int timeoutMs)`: waits up to `timeoutMs` for a message and delivers it (through
/// `NerveNative.deliver`) to every subscription it is for. 1 when one was handled, 0 on timeout, -1 once the bus
/// can receive nothing more (a `file://` log played to its end); `IOException` for a transport error.
#[jni_mangle("lcm.lcm.NerveNative")]
pub fn handle<'l>(mut env: EnvUnowned<'l>, class: JClass<'l>, handle: jlong, timeout_ms: jint) -> jint {
    env.with_env(|env| -> Result<jint, JniError> {
        let instance = instance(env, handle, "handle")?;
        let Ok(millis) = u64::try_from(timeout_ms) else {
            return throw(env, ILLEGAL_ARGUMENT, format!("handle: negative timeout {timeout_ms}"));
        };
        let handled = instance.bus.handle_timeout(Duration::from_millis(millis));
        // Delivered even when the bus also reports an error: the callbacks ran.
        let batch = BATCH.with(|b| std::mem::take(&mut *b.borrow_mut()));
        for (id, channel, data) in batch {
            let channel = env.new_string(channel)?.auto();
            let data = env.byte_array_from_slice(&data)?.auto();
            env.call_static_method(
                &class,
                jni_str!("deliver"),
                jni_sig!("(JLjava/lang/String;[B)V"),
                &[JValue::Long(id), JValue::Object(&channel), JValue::Object(&data)],
            )?;
        }
        match handled {
            Ok(true) => Ok(1),
            Ok(false) => Ok(0),
            Err(_) if instance.bus.health().receive_stopped => Ok(-1),
            Err(e) => throw_bus(env, "receive", e),
        }
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}
