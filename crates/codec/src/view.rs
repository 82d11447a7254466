//! Views: read single fields straight from an encoded buffer, without decoding the message.
//!
//! Generated `*View` types wrap a buffer whose fingerprint has been checked. A field whose offset is fixed (every
//! member before it has a fixed size) is read in constant time; a field after a variable-size member is found by
//! skipping over the members before it. Every read is bounds-checked and returns a [`crate::DecodeError`] rather than
//! trusting the buffer.
