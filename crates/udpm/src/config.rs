//! [`Config`]: a `udpm://` URL's network part and options, checked.

use std::fmt;
use std::net::Ipv4Addr;

use crate::reassembly::Limits;

/// LCM's default group and port.
pub const DEFAULT_GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 76, 67);
/// LCM's default port.
pub const DEFAULT_PORT: u16 = 7667;

/// Which interface multicast goes out of and is received on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interface {
    /// The kernel's choice (the route for the group), as LCM does.
    Default,
    /// The interface with this IPv4 address.
    Addr(Ipv4Addr),
    /// The interface with this name, e.g. `eth1`.
    Name(String),
}

/// Everything a udpm endpoint needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The multicast group.
    pub group: Ipv4Addr,
    /// The UDP port (the first one, for multi-port mode).
    pub port: u16,
    /// Multicast TTL: 0 keeps traffic on this host (LCM's default), 1 the local network.
    pub ttl: u8,
    /// SO_RCVBUF to ask for, if any.
    pub recv_buf_size: Option<usize>,
    /// Which interface to use.
    pub interface: Interface,
    /// Reassembly bounds.
    pub limits: Limits,
    /// Multi-port mode (LCM's `mpudpm`): channels spread over this many ports from `port` on.
    pub ports: Option<u16>,
    /// Whether batched sends may hand the kernel runs of equal-length datagrams to segment (UDP GSO, where the kernel
    /// has it); `gso=0` turns it off (the datagrams are the same either way).
    pub gso: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            group: DEFAULT_GROUP,
            port: DEFAULT_PORT,
            ttl: 0,
            recv_buf_size: None,
            interface: Interface::Default,
            limits: Limits::default(),
            ports: None,
            gso: true,
        }
    }
}

/// A bad `udpm://` URL part, named by what it is: `address`, `port`, `option ttl`, ...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// What the text is: `address`, `port`, or `option KEY`.
    pub part: String,
    /// The text at fault.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} '{}': {}", self.part, self.text, self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// `strtol(s, 0)`-style: decimal, `0x` hex or leading-0 octal, as LCM parses ports and TTLs.
fn parse_c_uint(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

fn bad(part: &str, text: &str, reason: &'static str) -> ConfigError {
    ConfigError { part: part.to_owned(), text: text.to_owned(), reason }
}

impl Config {
    /// Builds a config from a URL's network part (`ADDR:PORT`; `ADDR` alone takes port 7667 as LCM does; empty for
    /// the default group and port) and its options. Unknown options are returned for the caller to refuse.
    pub fn from_url_parts(network: &str, options: &[(String, String)]) -> Result<(Config, Vec<String>), ConfigError> {
        let mut c = Config::default();
        if !network.is_empty() {
            let (addr, port) = match network.rsplit_once(':') {
                Some((addr, port)) => (addr, Some(port)),
                None => (network, None),
            };
            c.group = addr.parse().map_err(|_| bad("address", addr, "not an IPv4 address"))?;
            if !c.group.is_multicast() {
                return Err(bad("address", addr, "not a multicast group (224.0.0.0 to 239.255.255.255)"));
            }
            if let Some(port) = port {
                c.port = parse_c_uint(port)
                    .and_then(|p| u16::try_from(p).ok())
                    .filter(|&p| p != 0)
                    .ok_or_else(|| bad("port", port, "must be 1 to 65535"))?;
            }
        }
        let mut unknown = Vec::new();
        for (key, value) in options {
            match key.as_str() {
                "ttl" => {
                    c.ttl = parse_c_uint(value)
                        .and_then(|t| u8::try_from(t).ok())
                        .ok_or_else(|| bad("option ttl", value, "must be 0 to 255"))?
                }
                "recv_buf_size" => {
                    c.recv_buf_size = Some(
                        parse_c_uint(value)
                            .and_then(|n| usize::try_from(n).ok())
                            .filter(|&n| n > 0 && n <= i32::MAX as usize)
                            .ok_or_else(|| bad("option recv_buf_size", value, "must be a positive number of bytes"))?,
                    )
                }
                "iface" | "interface" => {
                    c.interface = match value.parse::<Ipv4Addr>() {
                        Ok(a) => Interface::Addr(a),
                        Err(_) if !value.is_empty() => Interface::Name(value.clone()),
                        Err(_) => {
                            return Err(bad("option iface", value, "an interface name or IPv4 address is needed"))
                        }
                    }
                }
                "max_message_mb" => {
                    let mb = parse_c_uint(value)
                        .filter(|&n| (1..=4096).contains(&n))
                        .ok_or_else(|| bad("option max_message_mb", value, "must be 1 to 4096"))?;
                    c.limits.max_message = (mb as usize) << 20;
                    c.limits.max_bytes_in_flight = c.limits.max_bytes_in_flight.max(c.limits.max_message * 2);
                }
                "nports" => {
                    c.ports = Some(
                        parse_c_uint(value)
                            .and_then(|n| u16::try_from(n).ok())
                            .filter(|&n| n > 0)
                            .ok_or_else(|| bad("option nports", value, "must be 1 to 65535"))?,
                    )
                }
                "gso" => {
                    c.gso = match value.as_str() {
                        "0" | "false" | "off" => false,
                        "1" | "true" | "on" | "" => true,
                        _ => return Err(bad("option gso", value, "must be 0 or 1")),
                    }
                }
                // LCM accepts and ignores this obsolete option; so do we, silently.
                "transmit_only" => {}
                _ => unknown.push(key.clone()),
            }
        }
        if let Some(n) = c.ports {
            if c.port as u32 + n as u32 > 65536 {
                return Err(bad("port", &c.port.to_string(), "with nports, the ports go past 65535"));
            }
        }
        Ok((c, unknown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults_are_lcms() {
        let (c, unknown) = Config::from_url_parts("", &[]).unwrap();
        assert_eq!((c.group, c.port, c.ttl), (DEFAULT_GROUP, 7667, 0));
        assert!(unknown.is_empty());
    }

    #[test]
    fn options_parse_like_lcm() {
        let (c, unknown) = Config::from_url_parts(
            "239.1.2.3:0x1000",
            &opts(&[("ttl", "1"), ("recv_buf_size", "4194304"), ("iface", "lo"), ("bogus", "")]),
        )
        .unwrap();
        assert_eq!((c.port, c.ttl, c.recv_buf_size), (4096, 1, Some(4194304)));
        assert_eq!(c.interface, Interface::Name("lo".into()));
        assert_eq!(unknown, ["bogus"]);
        assert!(c.gso);
        assert!(!Config::from_url_parts("", &opts(&[("gso", "0")])).unwrap().0.gso);
        assert!(Config::from_url_parts("", &opts(&[("gso", "2")])).is_err());
    }

    #[test]
    fn an_address_without_a_port_takes_lcms_port() {
        let (c, _) = Config::from_url_parts("239.255.76.150", &[]).unwrap();
        assert_eq!((c.group, c.port), (Ipv4Addr::new(239, 255, 76, 150), DEFAULT_PORT));
        assert_eq!(Config::from_url_parts("239.255.76.150:7668", &[]).unwrap().0.port, 7668);
    }

    #[test]
    fn bad_urls_say_why() {
        let e = Config::from_url_parts("10.0.0.1:7667", &[]).unwrap_err();
        assert_eq!(e.to_string(), "address '10.0.0.1': not a multicast group (224.0.0.0 to 239.255.255.255)");
        let e = Config::from_url_parts("239.1.1.1:0", &[]).unwrap_err();
        assert_eq!(e.to_string(), "port '0': must be 1 to 65535");
        let e = Config::from_url_parts("", &opts(&[("ttl", "x")])).unwrap_err();
        assert_eq!(e.to_string(), "option ttl 'x': must be 0 to 255");
        assert!(Config::from_url_parts(":7667", &[]).is_err());
        assert!(Config::from_url_parts("239.1.1.1:70000", &[]).is_err());
        assert!(Config::from_url_parts("", &opts(&[("ttl", "256")])).is_err());
    }
}
