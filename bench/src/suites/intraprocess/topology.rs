//! The four graphs of ROS 2's intra-process design article's "Performance evaluation", as data.
//!
//! - `image_pipeline`: ROS 2's `intra_process_demo` `image_pipeline_all_in_one`: a camera publishes a 640x480 RGB
//!   image as an owned message (30 Hz), a watermark node takes it owned, draws on it and republishes it, a viewer
//!   takes it owned. `image_pipeline_2viewers`: the same with two viewers (`image_pipeline_with_two_image_view`),
//!   so the last hop has two owning subscriptions: ROS 2's intra-process design article's N-1 = 1 copy.
//! - `sierra_nevada` and `mont_blanc`: iRobot's ros2-performance topologies (`performances/benchmark/topology/
//!   sierra_nevada.json` and `mont_blanc.json` in github.com/irobot-ros/ros2-performance): node names, topics,
//!   periods and sizes as there. Every subscription takes messages shared (`const shared_ptr<const T>` callbacks,
//!   as the seed says). Message sizes are the data bytes of ros2-performance's types (`9float32` = 36 bytes,
//!   `4int32` = 16, `int64` = 8, `vector` its `msg_size`, `250kb` = 250,000...), carried in `image_t.data`.
//!
//! Seed 003 describes Sierra Nevada as "10 nodes, 10 publishers and 13 subscriptions"; the published topology file
//! has 10 nodes, 13 publishers and 17 subscriptions (one 10 KB topic, the rest 8-100 bytes, as the seed says). We run
//! the file. Mont Blanc's file matches the seed exactly: 20 nodes, 23 publishers, 35 subscriptions, two 250 KB
//! topics, the rest 1-25 KB or under 1 KB.

use nerve_bus::Take;

/// A topic and how it is published.
pub struct Topic {
    /// The channel.
    pub name: &'static str,
    /// Data bytes of each message.
    pub bytes: usize,
    /// Published by a timer every this many ms; `None`: republished by a forwarding subscription.
    pub period_ms: Option<u64>,
}

/// A subscription of a node.
pub struct Sub {
    /// The channel.
    pub topic: &'static str,
    /// Owned or shared.
    pub take: Take,
    /// A forwarding node modifies the message and republishes it (owned) on this topic; `None`: a consumer, whose
    /// callback records the end-to-end latency.
    pub forward_to: Option<&'static str>,
}

/// A node: what it publishes and subscribes to.
pub struct Node {
    /// Its name.
    pub name: &'static str,
    /// The topics it publishes.
    pub publishes: Vec<&'static str>,
    /// Its subscriptions.
    pub subscribes: Vec<Sub>,
}

/// One graph.
pub struct Topology {
    /// The JSON `case`.
    pub case: &'static str,
    /// Topics.
    pub topics: Vec<Topic>,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Whether every subscription takes messages shared (the zero-copy bar applies).
    pub all_shared: bool,
}

impl Topology {
    /// The topic called `name`.
    pub fn topic(&self, name: &str) -> &Topic {
        self.topics.iter().find(|t| t.name == name).expect("topologies name only their own topics")
    }

    /// The timer topic whose messages end up on `name` (itself, or the source of a forwarding chain).
    pub fn origin(&self, name: &'static str) -> &'static str {
        let mut t = name;
        // A chain is at most as long as the topic list.
        for _ in 0..self.topics.len() {
            if self.topic(t).period_ms.is_some() {
                return t;
            }
            match self.nodes.iter().flat_map(|n| &n.subscribes).find(|s| s.forward_to == Some(t)) {
                Some(s) => t = s.topic,
                None => return t,
            }
        }
        t
    }

    /// Publishers, subscriptions.
    pub fn counts(&self) -> (usize, usize) {
        (self.nodes.iter().map(|n| n.publishes.len()).sum(), self.nodes.iter().map(|n| n.subscribes.len()).sum())
    }
}

fn shared(topic: &'static str) -> Sub {
    Sub { topic, take: Take::Shared, forward_to: None }
}

fn node(name: &'static str, subscribes: &[&'static str], publishes: &[&'static str]) -> Node {
    Node { name, publishes: publishes.to_vec(), subscribes: subscribes.iter().map(|t| shared(t)).collect() }
}

fn topic(name: &'static str, bytes: usize, period_ms: u64) -> Topic {
    Topic { name, bytes, period_ms: Some(period_ms) }
}

/// 640 x 480 RGB.
pub const IMAGE_BYTES: usize = 640 * 480 * 3;

fn image_pipeline(viewers: usize) -> Topology {
    let mut nodes = vec![
        Node { name: "camera", publishes: vec!["image"], subscribes: vec![] },
        Node {
            name: "watermark",
            publishes: vec!["watermarked"],
            subscribes: vec![Sub { topic: "image", take: Take::Owned, forward_to: Some("watermarked") }],
        },
    ];
    for name in ["image_view", "image_view2"].into_iter().take(viewers) {
        nodes.push(Node {
            name,
            publishes: vec![],
            subscribes: vec![Sub { topic: "watermarked", take: Take::Owned, forward_to: None }],
        });
    }
    Topology {
        case: if viewers == 1 { "image_pipeline" } else { "image_pipeline_2viewers" },
        topics: vec![
            topic("image", IMAGE_BYTES, 33),
            Topic { name: "watermarked", bytes: IMAGE_BYTES, period_ms: None },
        ],
        nodes,
        all_shared: false,
    }
}

fn sierra_nevada() -> Topology {
    Topology {
        case: "sierra_nevada",
        topics: vec![
            topic("amazon", 36, 10),
            topic("nile", 16, 10),
            topic("ganges", 16, 10),
            topic("danube", 8, 10),
            topic("tigris", 16, 10),
            topic("parana", 12, 10),
            topic("salween", 48, 100),
            topic("missouri", 10_000, 100),
            topic("mekong", 100, 500),
            topic("congo", 16, 100),
            topic("lena", 50, 100),
            topic("volga", 8, 500),
            topic("arkansas", 16, 100),
        ],
        nodes: vec![
            node("montreal", &[], &["amazon", "nile", "ganges", "danube"]),
            node("lyon", &["amazon"], &["tigris"]),
            node("hamburg", &["nile", "tigris", "ganges", "danube"], &["parana"]),
            node("osaka", &["parana"], &["salween"]),
            node("mandalay", &["salween", "danube"], &["missouri"]),
            node("ponce", &["missouri", "danube", "volga"], &["mekong", "congo"]),
            node("barcelona", &["mekong"], &["lena"]),
            node("georgetown", &["lena"], &["volga"]),
            node("geneva", &["congo", "danube", "parana"], &["arkansas"]),
            node("arequipa", &["arkansas"], &[]),
        ],
        all_shared: true,
    }
}

fn mont_blanc() -> Topology {
    Topology {
        case: "mont_blanc",
        topics: vec![
            topic("amazon", 36, 10),
            topic("ganges", 16, 10),
            topic("nile", 16, 10),
            topic("danube", 8, 10),
            topic("tigris", 16, 10),
            topic("parana", 12, 10),
            topic("columbia", 250_000, 200),
            topic("colorado", 16, 200),
            topic("salween", 48, 100),
            topic("godavari", 5_000, 200),
            topic("loire", 1_000, 200),
            topic("yamuna", 16, 100),
            topic("chenab", 1_000, 25),
            topic("missouri", 10_000, 100),
            topic("tagus", 250_000, 25),
            topic("brazos", 25_000, 100),
            topic("mekong", 100, 500),
            topic("congo", 16, 100),
            topic("lena", 50, 100),
            topic("ohio", 100, 200),
            topic("volga", 8, 500),
            topic("murray", 100, 500),
            topic("arkansas", 16, 100),
        ],
        nodes: vec![
            node("cordoba", &[], &["amazon"]),
            node("freeport", &[], &["ganges"]),
            node("medellin", &[], &["nile"]),
            node("portsmouth", &[], &["danube"]),
            node("lyon", &["amazon"], &["tigris"]),
            node("hamburg", &["nile", "tigris", "ganges", "danube"], &["parana"]),
            node("delhi", &[], &["columbia"]),
            node("taipei", &["columbia"], &["colorado"]),
            node("osaka", &["parana", "colorado"], &["salween", "godavari"]),
            node("tripoli", &["columbia", "godavari"], &["loire"]),
            node("kingston", &[], &["yamuna"]),
            node("hebron", &[], &["chenab"]),
            node(
                "mandalay",
                &["salween", "danube", "godavari", "yamuna", "loire", "chenab"],
                &["missouri", "tagus", "brazos"],
            ),
            node(
                "ponce",
                &["missouri", "danube", "volga", "godavari", "yamuna", "loire", "tagus", "brazos", "ohio"],
                &["mekong", "congo"],
            ),
            node("barcelona", &["mekong"], &["lena"]),
            node("monaco", &["congo"], &["ohio"]),
            node("georgetown", &["lena", "murray"], &["volga"]),
            node("rotterdam", &["mekong"], &["murray"]),
            node("geneva", &["congo", "danube", "parana", "tagus"], &["arkansas"]),
            node("arequipa", &["arkansas"], &[]),
        ],
        all_shared: true,
    }
}

/// Every graph, in table order.
pub fn all() -> Vec<Topology> {
    vec![image_pipeline(1), image_pipeline(2), sierra_nevada(), mont_blanc()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_the_sources() {
        let t = all();
        assert_eq!((t[2].nodes.len(), t[2].counts()), (10, (13, 17)), "sierra_nevada.json");
        assert_eq!(
            (t[3].nodes.len(), t[3].counts()),
            (20, (23, 35)),
            "mont_blanc.json (and ROS 2's intra-process design article)"
        );
        assert_eq!(t[3].topics.iter().filter(|x| x.bytes == 250_000).count(), 2);
        assert_eq!(t[2].topics.iter().filter(|x| x.bytes > 100).count(), 1);
        for topo in &t {
            for n in &topo.nodes {
                for s in &n.subscribes {
                    topo.topic(s.topic);
                }
                for p in &n.publishes {
                    topo.topic(p);
                }
            }
            for x in &topo.topics {
                assert_eq!(topo.nodes.iter().filter(|n| n.publishes.contains(&x.name)).count(), 1, "{}", x.name);
            }
        }
        assert_eq!(t[1].origin("watermarked"), "image");
    }
}
