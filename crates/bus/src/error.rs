//! [`BusError`]: everything the bus can fail with, each with its context.

use std::fmt;

use crate::pattern::PatternError;
use crate::url::{UnknownOption, UrlError};

/// A bus failure.
#[derive(Debug)]
#[non_exhaustive]
pub enum BusError {
    /// The URL does not parse.
    Url(UrlError),
    /// The URL names a provider that is not registered ([`crate::provider::register`]).
    UnknownProvider {
        /// The provider named.
        provider: String,
        /// The schemes that are registered.
        registered: Vec<String>,
    },
    /// The URL has an option its provider does not know (a misspelling is an error, not silently ignored).
    UnknownOption {
        /// The URL.
        url: String,
        /// The provider (the URL's scheme).
        provider: String,
        /// The option given.
        option: String,
        /// The options the provider knows.
        known: Vec<String>,
    },
    /// The provider's options are wrong.
    Config {
        /// The URL.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A subscription pattern is not a valid regular expression.
    Pattern(PatternError),
    /// The transport failed (a socket call, no route, a message too large).
    Transport {
        /// The provider.
        provider: &'static str,
        /// What failed.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `handle()` was called from inside a handler, which would deadlock or reorder messages.
    HandleInsideHandler,
    /// A message handler panicked. The panic was caught: the message's other handlers ran and the bus stays usable.
    HandlerPanicked {
        /// The subscription's pattern (a typed subscription's channel).
        subscription: String,
        /// The panic's message.
        message: String,
    },
    /// The subscription was already removed.
    NotSubscribed,
    /// A typed message could not be encoded.
    Encode(nerve_codec::EncodeError),
    /// A typed publisher or subscription's QoS has a size of 0 where it needs at least 1.
    InvalidQos {
        /// The channel.
        channel: String,
        /// What is wrong.
        reason: String,
    },
    /// The transport cannot honour a QoS policy asked for (e.g. reliable over UDP multicast): refused rather than
    /// silently degraded.
    QosUnsupported {
        /// The provider.
        provider: &'static str,
        /// The channel.
        channel: String,
        /// The policy, `reliable` or `transient_local`.
        policy: &'static str,
        /// Why, and what to do instead.
        reason: &'static str,
    },
    /// A typed publisher and subscription on one channel have QoS that cannot work together (ROS 2's rule); the
    /// second one created is refused.
    IncompatibleQos {
        /// The channel.
        channel: String,
        /// The policy, `reliability` or `durability`.
        policy: &'static str,
        /// What each side has.
        reason: String,
    },
    /// A typed publisher and subscription on one channel are of different message types; the second one created is
    /// refused.
    TypeMismatch {
        /// The channel.
        channel: String,
        /// The type of the one being created.
        wanted: &'static str,
        /// Its fingerprint.
        wanted_fingerprint: u64,
        /// The type already on the channel.
        found: &'static str,
        /// Its fingerprint.
        found_fingerprint: u64,
    },
    /// Reliable keep-all subscriptions were at their resource limit and could not take a message (every other
    /// subscription did): the publisher is told rather than blocked.
    LimitReached {
        /// The channel.
        channel: String,
        /// How many subscriptions refused it.
        subscriptions: usize,
        /// The (smallest) limit they hold.
        limit: usize,
    },
}

impl fmt::Display for BusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BusError::Url(e) => e.fmt(f),
            BusError::UnknownProvider { provider, registered } => {
                write!(f, "unknown provider '{provider}://' (this build has: {})", registered.join(", "))
            }
            BusError::UnknownOption { url, provider, option, known } if known.is_empty() => {
                write!(f, "{url}: unknown option '{option}' ({provider}:// takes no options)")
            }
            BusError::UnknownOption { url, provider, option, known } => {
                write!(f, "{url}: unknown option '{option}' ({provider}:// knows: {})", known.join(", "))
            }
            BusError::Config { url, reason } => write!(f, "{url}: {reason}"),
            BusError::Pattern(e) => e.fmt(f),
            // The source is not repeated here: it is the next link of the chain (`source()`).
            BusError::Transport { provider, .. } => write!(f, "{provider} transport"),
            BusError::HandleInsideHandler => write!(f, "handle() called from inside a message handler"),
            BusError::HandlerPanicked { subscription, message } => {
                write!(f, "the handler of subscription '{subscription}' panicked: {message}")
            }
            BusError::NotSubscribed => write!(f, "not subscribed (already unsubscribed?)"),
            BusError::Encode(_) => write!(f, "encoding the message"),
            BusError::InvalidQos { channel, reason } => write!(f, "channel {channel}: {reason}"),
            BusError::QosUnsupported { provider, channel, policy, reason } => {
                write!(f, "channel {channel}: {policy} is not possible over {provider}://: {reason}")
            }
            BusError::IncompatibleQos { channel, policy, reason } => {
                write!(f, "channel {channel}: incompatible {policy} QoS: {reason}")
            }
            BusError::TypeMismatch { channel, wanted, wanted_fingerprint, found, found_fingerprint } => write!(
                f,
                "channel {channel} carries {found} (fingerprint 0x{found_fingerprint:016x}), not {wanted} \
                 (0x{wanted_fingerprint:016x})"
            ),
            BusError::LimitReached { channel, subscriptions, limit } => write!(
                f,
                "channel {channel}: {subscriptions} reliable keep_all subscription(s) at their limit of {limit} \
                 messages did not take this one"
            ),
        }
    }
}

impl From<UnknownOption> for BusError {
    fn from(e: UnknownOption) -> BusError {
        let UnknownOption { url, provider, option, known } = e;
        BusError::UnknownOption { url, provider, option, known }
    }
}

impl std::error::Error for BusError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // Url and Pattern display their whole content themselves, so they have no further source.
        match self {
            BusError::Transport { source, .. } => Some(source.as_ref()),
            BusError::Encode(e) => Some(e),
            _ => None,
        }
    }
}

/// A batch publication ([`crate::Bus::publish_raw_batch`]) that stopped at one message.
#[derive(Debug)]
pub struct BatchError {
    /// How many messages, from the first, were published: `batch[sent]` is the one that failed, and none after it was
    /// published.
    pub sent: usize,
    /// Why it failed, as a single publication reports it.
    pub error: BusError,
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "message {} of the batch", self.sent)
    }
}

impl std::error::Error for BatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// A received message that is not of the type a typed subscription expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeError {
    /// Its fingerprint belongs to another type (or it is shorter than a fingerprint).
    WrongType {
        /// The type the subscription expects.
        expected: &'static str,
        /// Its fingerprint.
        expected_fingerprint: u64,
        /// The fingerprint found, if the message has 8 bytes.
        found: Option<u64>,
    },
    /// The fingerprint is right but the body does not decode.
    Decode(nerve_codec::DecodeError),
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeError::WrongType { expected, expected_fingerprint, found: Some(fp) } => {
                write!(f, "message has fingerprint 0x{fp:016x}, not {expected}'s 0x{expected_fingerprint:016x}")
            }
            TypeError::WrongType { expected, .. } => write!(f, "message too short to be a {expected}"),
            TypeError::Decode(e) => write!(f, "message does not decode: {e}"),
        }
    }
}

impl std::error::Error for TypeError {}
