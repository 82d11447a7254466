//! Typed channels: [`TypedWriter`] and [`TypedReader`] put and get LCM-encoded [`nerve_codec::Message`]s (fingerprint
//! first), encoding straight into a loaned frame and decoding straight from the ring.

use std::marker::PhantomData;

use nerve_codec::Message;

use crate::error::ShmError;
use crate::ring::{GetOutcome, MessageInfo, ReadMode, Reader, Wait, Writer};

/// Puts messages of type `M`, encoded in place in the channel (no intermediate buffer).
pub struct TypedWriter<M> {
    writer: Writer,
    _type: PhantomData<fn(&M)>,
}

impl<M: Message> TypedWriter<M> {
    /// Wraps a writer.
    pub fn new(writer: Writer) -> TypedWriter<M> {
        TypedWriter { writer, _type: PhantomData }
    }

    /// The raw writer.
    pub fn writer(&mut self) -> &mut Writer {
        &mut self.writer
    }

    /// Encodes `msg` into a loaned frame and publishes it; returns its sequence number. A message that does not
    /// encode (an array whose length disagrees with its count member) is an error and publishes nothing, but, as
    /// with a dropped loan, the oldest message may already have been dropped to make room.
    pub fn put(&mut self, msg: &M) -> Result<u64, ShmError> {
        let size = msg.encoded_size();
        let mut loan = self.writer.loan(size)?;
        let written = msg.encode_into(loan.bytes_mut()).map_err(ShmError::Encode)?;
        debug_assert_eq!(written, size, "encoded_size disagrees with encode_into");
        Ok(loan.commit())
    }
}

/// Gets messages of type `M`, decoded straight from the channel's memory.
pub struct TypedReader<M> {
    reader: Reader,
    _type: PhantomData<fn() -> M>,
}

impl<M: Message> TypedReader<M> {
    /// Wraps a reader.
    pub fn new(reader: Reader) -> TypedReader<M> {
        TypedReader { reader, _type: PhantomData }
    }

    /// The raw reader.
    pub fn reader(&mut self) -> &mut Reader {
        &mut self.reader
    }

    /// Gets and decodes the next (or newest) message. Bytes that are not an `M` (another type's fingerprint, a
    /// truncated body) are a [`ShmError::Decode`]; the reader has moved past that message.
    pub fn get(&mut self, mode: ReadMode, wait: Wait) -> Result<GetOutcome<(MessageInfo, M)>, ShmError> {
        let outcome = self.reader.get_with(mode, wait, |bytes| M::decode(bytes))?;
        self.decoded(outcome)
    }

    /// Like [`TypedReader::get`], decoding into `msg` and reusing its strings' and vectors' memory (no allocation
    /// in steady state). On an error `msg` holds an unspecified mix of values.
    pub fn get_into(&mut self, msg: &mut M, mode: ReadMode, wait: Wait) -> Result<GetOutcome, ShmError> {
        let outcome = self.reader.get_with(mode, wait, |bytes| msg.decode_into(bytes))?;
        Ok(self.decoded(outcome)?.map(|(info, ())| info))
    }

    /// Turns a decode failure of a validated message into [`ShmError::Decode`].
    fn decoded<T>(
        &self,
        outcome: GetOutcome<(MessageInfo, Result<T, nerve_codec::DecodeError>)>,
    ) -> Result<GetOutcome<(MessageInfo, T)>, ShmError> {
        if let GetOutcome::Message((info, Err(source))) = outcome {
            return Err(ShmError::Decode { path: self.reader.path().to_path_buf(), seq: info.seq, source });
        }
        Ok(outcome.map(|(info, value)| (info, value.unwrap_or_else(|_| unreachable!("handled above")))))
    }
}
