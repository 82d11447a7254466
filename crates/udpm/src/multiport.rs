//! LCM's multi-port mode (`mpudpm`, spec 4.3): channels spread over `nports` ports from the start port, so a process
//! joins only the ports of the channels it wants instead of receiving every datagram on the group.
//!
//! Byte-compatible with liblcm 1.5.3, as observed on the wire: a channel's port is `start + djb2(channel) % nports`;
//! publishers announce the channels they publish on the start port with channel `#!mpudpm_CH2PRT_UPD`, an LCM
//! message of type `lcm.channel_port_map_update_t` (absolute port numbers), when a channel is first published and
//! every few seconds; a subscriber asks for announcements with `#!mpudpm_CH2PRT_REQ`. Channels starting with `#!`
//! are the protocol's own and never application data.

use nerve_codec::{DecodeError, Reader, Writer};

/// Channel of the channel-to-port announcements.
pub const UPDATE_CHANNEL: &str = "#!mpudpm_CH2PRT_UPD";
/// Channel of the requests for announcements.
pub const REQUEST_CHANNEL: &str = "#!mpudpm_CH2PRT_REQ";
/// Payload liblcm sends with a request.
pub const REQUEST_PAYLOAD: &[u8] = b"r";
/// Prefix of the protocol's internal channels.
pub const INTERNAL_PREFIX: &str = "#!";
/// LCM's default number of ports.
pub const DEFAULT_PORTS: u16 = 500;
/// Fingerprint of `lcm.channel_port_map_update_t { int16_t num_ports; int16_t num_channels;
/// channel_to_port_t mapping[num_channels]; }` with `channel_to_port_t { string channel; int16_t port; }`.
pub const UPDATE_FINGERPRINT: u64 = 0xcba5_1af0_1aff_9e62;

/// djb2 over the channel's bytes as x86-64 signed chars, in 32-bit arithmetic, as liblcm computes it.
pub fn djb2(channel: &str) -> u32 {
    channel.bytes().fold(5381u32, |h, b| h.wrapping_mul(33).wrapping_add(b as i8 as i32 as u32))
}

/// The port a channel's datagrams go to.
pub fn port_of(channel: &str, start: u16, nports: u16) -> u16 {
    start + (djb2(channel) % nports as u32) as u16
}

/// Whether a channel is the protocol's own.
pub fn is_internal(channel: &str) -> bool {
    channel.starts_with(INTERNAL_PREFIX)
}

/// A channel-to-port announcement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// The sender's `nports`.
    pub nports: u16,
    /// Channels and their absolute ports.
    pub mapping: Vec<(String, u16)>,
}

impl Update {
    /// Encodes it as liblcm does (fingerprint first).
    pub fn encode(&self) -> Vec<u8> {
        let size = 8 + 4 + self.mapping.iter().map(|(c, _)| 4 + c.len() + 1 + 2).sum::<usize>();
        let mut buf = vec![0u8; size];
        let mut w = Writer::new(&mut buf);
        // The buffer is sized exactly above, so these writes cannot fail.
        let _ = w.put_u64(UPDATE_FINGERPRINT);
        let _ = w.put_i16(self.nports as i16);
        let _ = w.put_i16(self.mapping.len().min(i16::MAX as usize) as i16);
        for (channel, port) in self.mapping.iter().take(i16::MAX as usize) {
            let _ = w.put_str(channel);
            let _ = w.put_i16(*port as i16);
        }
        buf
    }

    /// Decodes one, checking every length.
    pub fn decode(buf: &[u8]) -> Result<Update, DecodeError> {
        let mut r = Reader::new(buf);
        r.expect_fingerprint(UPDATE_FINGERPRINT)?;
        let nports = r.get_i16()? as u16;
        let count = r.get_i16()?;
        let n = r.count(count as i64)?;
        r.ensure_elements(n, 7)?;
        let mut mapping = Vec::with_capacity(n);
        for _ in 0..n {
            let channel = r.get_str()?.to_owned();
            let port = r.get_i16()? as u16;
            mapping.push((channel, port));
        }
        Ok(Update { nports, mapping })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_match_liblcm() {
        // Observed with liblcm 1.5.3 on mpudpm://239.255.76.70:7800?nports=16.
        assert_eq!(port_of("POSE", 7800, 16), 7812);
        assert_eq!(port_of("CAM_FRONT", 7800, 16), 7814);
        assert_eq!(port_of("#!mpudpm_SELF_TEST", 7800, 16), 7804);
    }

    #[test]
    fn update_bytes_match_liblcm() {
        // The payload liblcm sent after publishing POSE and CAM_FRONT.
        let wire = "cba51af01aff9e620010000200000005504f5345001e840000000a43414d5f46524f4e54001e86";
        let bytes: Vec<u8> =
            (0..wire.len()).step_by(2).map(|i| u8::from_str_radix(&wire[i..i + 2], 16).unwrap()).collect();
        let u = Update::decode(&bytes).unwrap();
        assert_eq!(u, Update { nports: 16, mapping: vec![("POSE".into(), 7812), ("CAM_FRONT".into(), 7814)] });
        assert_eq!(u.encode(), bytes);
        assert!(Update::decode(&bytes[..bytes.len() - 1]).is_err());
        let mut huge = bytes.clone();
        huge[10..12].copy_from_slice(&0x7fffu16.to_be_bytes());
        assert!(Update::decode(&huge).is_err());
    }
}
