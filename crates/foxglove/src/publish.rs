//! Clients publishing into the bus (`--allow-publish`): a client advertises a channel with `json` encoding and the
//! name of an LCM type the server knows as its schema name; each message is read as that type's JSON (the form
//! [`nerve_types::dynamic::from_json`] reads: nested arrays, byte arrays as arrays of numbers), encoded with the
//! dynamic codec and published on the bus channel of the same name. Refusals go back to that client as an error
//! status, never to the bus. When publishing is not allowed the SDK does not offer the capability and this
//! listener refuses anything a client sends anyway.

use foxglove::websocket::{Client, ClientChannel, ServerListener, Status};
use nerve_bus::Bus;
use nerve_types::{Registry, TypeName};

pub(crate) struct Publisher {
    bus: Bus,
    registry: Option<Registry>,
    allowed: bool,
}

impl Publisher {
    pub(crate) fn new(bus: Bus, registry: Option<Registry>, allowed: bool) -> Publisher {
        Publisher { bus, registry, allowed }
    }

    /// The LCM bytes for one client message, or why not.
    fn encode(&self, channel: &ClientChannel, payload: &[u8]) -> Result<Vec<u8>, String> {
        if !self.allowed {
            return Err("publishing is off (start the server with --allow-publish)".into());
        }
        if channel.encoding != "json" {
            return Err(format!("channel {:?}: encoding {:?} is not \"json\"", channel.topic, channel.encoding));
        }
        let Some(registry) = &self.registry else {
            return Err("the server was given no types (--types), so it cannot encode anything".into());
        };
        let name = TypeName::parse(&channel.schema_name);
        if registry.by_name(&name).is_none() {
            return Err(format!("channel {:?}: no LCM type named {:?}", channel.topic, channel.schema_name));
        }
        let text = std::str::from_utf8(payload).map_err(|e| format!("message is not UTF-8 text: {e}"))?;
        let value = registry.from_json(&name, text).map_err(|e| format!("{}: {e}", channel.schema_name))?;
        registry.encode(&name, &value).map_err(|e| format!("{}: {e}", channel.schema_name))
    }
}

impl ServerListener for Publisher {
    fn on_message_data(&self, client: Client, channel: &ClientChannel, payload: &[u8]) {
        let result = self
            .encode(channel, payload)
            .and_then(|bytes| self.bus.publish_raw(&channel.topic, &bytes).map_err(|e| e.to_string()));
        if let Err(why) = result {
            client.send_status(Status::error(format!("not published: {why}")));
        }
    }
}
