//! The provider registry as a provider crate uses it: a scheme registered with a constructor is reachable by URL,
//! the unknown-provider error lists what is registered, and an unknown URL option is a typed error from
//! `Bus::new`, naming the option and the ones the provider knows.

use std::sync::Arc;

use nerve_bus::provider::{self, Provider, ProviderStats, Sink};
use nerve_bus::{Bus, BusError, Url};

/// A provider of another crate: it moves nothing, and remembers the network part of its URL.
struct Loopless {
    network: String,
}

impl Provider for Loopless {
    fn name(&self) -> &'static str {
        "loopless"
    }
    fn publish(&self, _channel: &str, _data: &[u8]) -> Result<(), BusError> {
        Ok(())
    }
    fn start(&self, _sink: Arc<dyn Sink>) -> Result<(), BusError> {
        Ok(())
    }
    fn stats(&self) -> ProviderStats {
        ProviderStats { published: self.network.len() as u64, ..ProviderStats::default() }
    }
}

fn open_loopless(url: &Url) -> Result<Box<dyn Provider>, BusError> {
    provider::check_options(url, &["depth"])?;
    Ok(Box::new(Loopless { network: url.network.clone() }))
}

#[test]
fn a_registered_scheme_opens_by_url() {
    let e = Bus::new(Some("loopless://abc")).err().expect("not registered yet");
    assert!(matches!(&e, BusError::UnknownProvider { provider, .. } if provider == "loopless"), "{e:?}");
    assert!(!e.to_string().contains("loopless,"), "{e}");

    assert!(provider::register("loopless", open_loopless).is_none());
    let bus = Bus::new(Some("loopless://abc?depth=3")).unwrap();
    assert_eq!(bus.provider_name(), "loopless");
    assert_eq!(bus.provider_stats().published, 3, "the constructor saw the URL's network part");
    let listed = Bus::new(Some("nosuch://")).err().unwrap().to_string();
    assert!(listed.contains("udpm") && listed.contains("shm") && listed.contains("loopless"), "{listed}");

    let e = Bus::new(Some("loopless://abc?dpeth=3")).err().unwrap();
    assert!(matches!(&e, BusError::UnknownOption { option, known, .. } if option == "dpeth" && known == &["depth"]));
}

#[test]
fn unknown_options_of_builtin_providers_are_errors() {
    for (url, option, known) in [
        ("shm://?frame=8", "frame", "frames"),
        ("udpm://239.255.76.67:7667?ttl=0&tll=1", "tll", "recv_buf_size"),
        ("udpm://239.255.76.67:7667?nports=4", "nports", "ttl"),
        ("mpudpm://239.255.76.67:7667?nport=4", "nport", "nports"),
        ("file:///nonexistent-nerve-log?sped=2", "sped", "speed"),
        ("memq://?x=1", "x", ""),
        ("inproc://a?x=1", "x", ""),
    ] {
        match Bus::new(Some(url)) {
            Err(e @ BusError::UnknownOption { .. }) => {
                let BusError::UnknownOption { option: got, known: list, .. } = &e else { unreachable!() };
                assert_eq!(got, option, "{url}");
                assert!(known.is_empty() || list.iter().any(|k| k == known), "{url}: {list:?}");
                let text = e.to_string();
                assert!(text.contains(&format!("'{option}'")) && text.contains(known), "{text}");
            }
            Err(e) => panic!("{url}: {e:?}"),
            Ok(_) => panic!("{url}: opened"),
        }
    }
}
