//! `nerve-bench foxglove`: what serving a bus to a Foxglove client costs, next to
//! `nerve spy --once` on the same traffic in the same run.
//!
//! This process publishes a 1 kHz pose (`foxtest.pose_t`) and a 30 Hz 640x480 grayscale image (`exlcm.image_t`)
//! on udpm, each message's `utime` the publish time (µs since the epoch). `nerve foxglove` (a process) serves that
//! bus; a WebSocket client here (tungstenite) subscribes to both channels and takes, per message, its receipt time
//! minus the `utime` at the head of the message's JSON: the publish-to-client latency. While the client is
//! subscribed, `nerve spy --json --duration D` (a process) listens to the same traffic. Over the spy's lifetime:
//! the server's CPU time (every thread's, from `/proc/PID/task/*/schedstat`) per message the client received, the
//! spy's CPU time (its `wait4` rusage, start-up included) per message it counted, and their ratio.
//!
//! A second case, `mapped image 640x480 30 Hz`, publishes only the image, in a pixel format the built-in mappings
//! know (grayscale), and the client subscribes only to `IMAGE/foxglove.RawImage`, the server's protobuf
//! `foxglove.RawImage` of it: the server's CPU time per frame the client received (over a window of the same
//! length, no spy), and publish-to-client latency, the receipt time minus the RawImage's timestamp (the `utime`).
//!
//! The programs are the `nerve` binary next to this one (`cargo build --release -p nerve-cli`); without it the rows
//! say `unavailable`.

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use nerve_bus::Bus;
use nerve_types::{Registry, TypeName};
use serde_json::json;
use tungstenite::client::IntoClientRequest;
use tungstenite::Message;

const CASE: &str = "pose 1 kHz + image 640x480 30 Hz";
const MAPPED_CASE: &str = "mapped image 640x480 30 Hz";
/// The mapped channel's topic: the bus channel, then the schema (nerve_foxglove's naming).
const MAPPED_TOPIC: &str = "IMAGE/foxglove.RawImage";
/// Camunits' (libbot's) PIXEL_FORMAT_GRAY, which the built-in mapping of exlcm.image_t shows as mono8.
const GRAY: i32 = 1497715271;
const GROUP: &str = "239.255.76.99";

fn url() -> String {
    // Below the ephemeral range, apart from the log suite's block (31800-31999) and the echo suite's.
    let port = 31_600 + (std::process::id() % 100) as u16 * 2;
    format!("udpm://{GROUP}:{port}?ttl=0&recv_buf_size=4194304")
}

/// [`nerve_codec::now_utime`] as the messages' `utime` bytes and the report's arithmetic take it (unsigned).
fn now_us() -> u64 {
    nerve_codec::now_utime() as u64
}

fn types_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    vec![root.join("crates/foxglove/tests/data"), root.join("examples/types")]
}

/// The two messages, encoded; `utime` (bytes 8..16 of both: the fingerprint, then `utime`) is stamped per publish.
fn messages() -> Result<(Vec<u8>, Vec<u8>), String> {
    messages_with(0)
}

/// The same messages, the image's pixel format `pixelformat`.
fn messages_with(pixelformat: i32) -> Result<(Vec<u8>, Vec<u8>), String> {
    let (reg, diags) = Registry::load_dirs(&types_dirs());
    if diags.has_errors() {
        return Err(diags.render());
    }
    let encode = |name: &str, json: &str| {
        let t = TypeName::parse(name);
        reg.from_json(&t, json).and_then(|v| reg.encode(&t, &v)).map_err(|e| format!("{name}: {e}"))
    };
    let pose = encode(
        "foxtest.pose_t",
        r#"{"utime":1,"position":[0.5,1.25,-2.0],"q":[1.0,0.0,0.0,0.0],"frame":"map","counts":[7,-8],
            "waypoints":[{"x":1.5,"y":-0.25},{"x":0.0,"y":3.0}],"ok":true,"raw":[1,2]}"#,
    )?;
    let pixels: Vec<String> = (0..640 * 480).map(|i| (i % 251).to_string()).collect();
    let image = encode(
        "exlcm.image_t",
        &format!(r#"{{"utime":1,"width":640,"height":480,"pixelformat":{pixelformat},"data":[{}]}}"#, pixels.join(",")),
    )?;
    Ok((pose, image))
}

/// Publishes the pose every millisecond (unless `pose` is empty) and the image every 33rd, until stopped; how
/// many of each.
fn publish(bus: Bus, pose: Vec<u8>, image: Vec<u8>, stop: Arc<AtomicBool>) -> (u64, u64) {
    let (mut pose, mut image) = (pose, image);
    let started = Instant::now();
    let (mut k, mut images) = (0u64, 0u64);
    while !stop.load(Ordering::Acquire) {
        if !pose.is_empty() {
            pose[8..16].copy_from_slice(&now_us().to_be_bytes());
            let _ = bus.publish_raw("POSE", &pose);
        }
        if k.is_multiple_of(33) {
            image[8..16].copy_from_slice(&now_us().to_be_bytes());
            let _ = bus.publish_raw("IMAGE", &image);
            images += 1;
        }
        k += 1;
        if let Some(wait) = Duration::from_millis(k).checked_sub(started.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    (k, images)
}

/// The CPU time of every thread of process `pid` so far, in nanoseconds.
fn process_cpu_ns(pid: u32) -> Result<u64, String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| format!("/proc/{pid}/task: {e}"))?;
    let mut ns = 0;
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        ns += stat.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    }
    Ok(ns)
}

/// Waits for child `pid` and returns its user + system CPU time in nanoseconds.
fn wait_cpu_ns(child: &mut Child) -> Result<u64, String> {
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills; the pid is our own child's, waited for once (not by `Child`).
    #[allow(unsafe_code)]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::wait4(child.id() as i32, &mut status, 0, &mut usage) < 0 {
            return Err(format!("wait4: {}", std::io::Error::last_os_error()));
        }
        usage
    };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Ok(tv(usage.ru_utime) + tv(usage.ru_stime))
}

/// What the client saw: per channel (0 pose, 1 image), the receipt time and latency of each message, in µs.
type Seen = [Vec<(u64, u64)>; 2];

/// A Foxglove protocol connection to `addr` whose reads wake up now and then (to see a stop flag).
fn connect(addr: &str) -> Result<tungstenite::WebSocket<TcpStream>, String> {
    let mut req = format!("ws://{addr}/").into_client_request().map_err(|e| e.to_string())?;
    req.headers_mut().insert("sec-websocket-protocol", tungstenite::http::HeaderValue::from_static("foxglove.sdk.v1"));
    let stream = TcpStream::connect(addr).map_err(|e| format!("connecting to {addr}: {e}"))?;
    let (ws, _) = tungstenite::client(req, stream).map_err(|e| format!("WebSocket handshake: {e}"))?;
    ws.get_ref().set_read_timeout(Some(Duration::from_millis(200))).map_err(|e| e.to_string())?;
    Ok(ws)
}

/// The next message, or `None` when the read timed out.
fn read(ws: &mut tungstenite::WebSocket<TcpStream>) -> Result<Option<Message>, String> {
    match ws.read() {
        Ok(m) => Ok(Some(m)),
        Err(tungstenite::Error::Io(e))
            if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
        {
            Ok(None)
        }
        Err(e) => Err(format!("reading: {e}")),
    }
}

/// Connects to the server, subscribes to POSE and IMAGE as they are advertised, and records every message until
/// `stop`; says on `ready` once subscribed to both.
fn client(addr: &str, ready: mpsc::Sender<()>, stop: Arc<AtomicBool>) -> Result<Seen, String> {
    let mut ws = connect(addr)?;
    let mut seen: Seen = [Vec::new(), Vec::new()];
    let mut subscribed = 0;
    while !stop.load(Ordering::Acquire) {
        let Some(msg) = read(&mut ws)? else { continue };
        let at = now_us();
        match msg {
            Message::Text(t) => {
                let v: serde_json::Value = serde_json::from_str(&t).map_err(|e| e.to_string())?;
                if v["op"] != "advertise" {
                    continue;
                }
                for ch in v["channels"].as_array().into_iter().flatten() {
                    let sub = match ch["topic"].as_str() {
                        Some("POSE") => 0,
                        Some("IMAGE") => 1,
                        _ => continue,
                    };
                    let op = json!({"op": "subscribe", "subscriptions": [{"id": sub, "channelId": ch["id"]}]});
                    ws.send(Message::Text(op.to_string().into())).map_err(|e| e.to_string())?;
                    subscribed += 1;
                    if subscribed == 2 {
                        let _ = ready.send(());
                    }
                }
            }
            Message::Binary(b) if b.len() > 13 && b[0] == 1 => {
                let sub = u32::from_le_bytes(b[1..5].try_into().expect("4 bytes")) as usize;
                // The JSON starts `{"utime":N,`: the publish time.
                let json = &b[13..];
                let utime = json
                    .strip_prefix(b"{\"utime\":")
                    .and_then(|rest| std::str::from_utf8(&rest[..rest.iter().position(|&c| c == b',')?]).ok())
                    .and_then(|n| n.parse::<u64>().ok());
                if let (Some(list), Some(utime)) = (seen.get_mut(sub), utime) {
                    list.push((at, at.saturating_sub(utime)));
                }
            }
            _ => {}
        }
    }
    Ok(seen)
}

fn percentile(v: &mut [u64], p: f64) -> Option<f64> {
    v.sort_unstable();
    (!v.is_empty()).then(|| v[((v.len() - 1) as f64 * p).round() as usize] as f64)
}

/// `--types DIR` for each of the suite's type directories.
fn types_args() -> Vec<std::ffi::OsString> {
    let mut types = Vec::new();
    for d in types_dirs() {
        types.push("--types".into());
        types.push(d.into_os_string());
    }
    types
}

/// Starts `nerve foxglove` on `url` (the built-in mappings on); the server and the address it says it serves.
fn start_server(nerve: &Path, url: &str) -> Result<(Server, String), String> {
    let mut child = Command::new(nerve)
        .args(["foxglove", "--url", url, "--listen", "127.0.0.1:0"])
        .args(types_args())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting nerve foxglove: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let server = Server(child);
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\n") && stdout.read(&mut byte).map_err(|e| e.to_string())? == 1 {
        line.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&line).into_owned();
    let addr = line.split("http://").nth(1).and_then(|s| s.split('/').next()).ok_or(format!("said {line:?}"))?;
    Ok((server, addr.to_owned()))
}

/// Connects to the server, subscribes to [`MAPPED_TOPIC`] once advertised, and records, per RawImage received
/// until `stop`, its receipt time and its latency (receipt minus the image's timestamp), in µs; says on `ready`
/// once subscribed.
fn mapped_client(addr: &str, ready: mpsc::Sender<()>, stop: Arc<AtomicBool>) -> Result<Vec<(u64, u64)>, String> {
    use foxglove::Decode;
    let mut ws = connect(addr)?;
    let mut seen = Vec::new();
    while !stop.load(Ordering::Acquire) {
        let Some(msg) = read(&mut ws)? else { continue };
        let at = now_us();
        match msg {
            Message::Text(t) => {
                let v: serde_json::Value = serde_json::from_str(&t).map_err(|e| e.to_string())?;
                if v["op"] != "advertise" {
                    continue;
                }
                for ch in v["channels"].as_array().into_iter().flatten().filter(|c| c["topic"] == MAPPED_TOPIC) {
                    if ch["encoding"] != "protobuf" || ch["schemaName"] != "foxglove.RawImage" {
                        return Err(format!("{MAPPED_TOPIC} is advertised as {ch}"));
                    }
                    let op = json!({"op": "subscribe", "subscriptions": [{"id": 0, "channelId": ch["id"]}]});
                    ws.send(Message::Text(op.to_string().into())).map_err(|e| e.to_string())?;
                    let _ = ready.send(());
                }
            }
            // Opcode 1, subscription id, log time, then the protobuf RawImage.
            Message::Binary(b) if b.len() > 13 && b[0] == 1 => {
                let image = foxglove::schemas::RawImage::decode(&b[13..])
                    .map_err(|e| format!("{MAPPED_TOPIC}: not a RawImage: {e}"))?;
                if (image.width, image.height, image.data.len()) != (640, 480, 640 * 480) {
                    return Err(format!("{MAPPED_TOPIC}: a {}x{} image", image.width, image.height));
                }
                let t = image.timestamp.ok_or("a RawImage without a timestamp")?;
                let published = u64::from(t.sec()) * 1_000_000 + u64::from(t.nsec()) / 1000;
                seen.push((at, at.saturating_sub(published)));
            }
            _ => {}
        }
    }
    Ok(seen)
}

/// The mapped case: server CPU per frame and the latency percentiles (µs) over `seconds`.
struct MappedOutcome {
    server_cpu_ns: u64,
    frames: u64,
    latency_us: [Option<f64>; 2],
    published: u64,
}

fn measure_mapped(nerve: &Path, seconds: f64) -> Result<MappedOutcome, String> {
    let url = url();
    let (_, image) = messages_with(GRAY)?;
    let bus = Bus::new(Some(&url)).map_err(|e| format!("{url}: {e}"))?;
    let stop_publishing = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&stop_publishing);
    let publisher = std::thread::spawn(move || publish(bus, Vec::new(), image, s));
    let result = (|| {
        let (server, addr) = start_server(nerve, &url)?;
        let (ready_tx, ready) = mpsc::channel();
        let stop_client = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop_client);
        let client = std::thread::spawn(move || mapped_client(&addr, ready_tx, s));
        if ready.recv_timeout(Duration::from_secs(10)).is_err() {
            stop_client.store(true, Ordering::Release);
            return Err(client.join().map_err(|_| "client panicked")?.err().unwrap_or("never subscribed".into()));
        }
        std::thread::sleep(Duration::from_millis(300));
        let (from, cpu0) = (now_us(), process_cpu_ns(server.0.id())?);
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let (to, cpu1) = (now_us(), process_cpu_ns(server.0.id())?);
        std::thread::sleep(Duration::from_millis(200));
        stop_client.store(true, Ordering::Release);
        let seen = client.join().map_err(|_| "client panicked")??;
        drop(server);
        let mut lat: Vec<u64> = seen.iter().filter(|(at, _)| (from..to).contains(at)).map(|&(_, l)| l).collect();
        let frames = lat.len() as u64;
        Ok((cpu1 - cpu0, frames, [percentile(&mut lat, 0.5), percentile(&mut lat, 0.99)]))
    })();
    stop_publishing.store(true, Ordering::Release);
    let (_, published) = publisher.join().map_err(|_| "publisher panicked")?;
    let (server_cpu_ns, frames, latency_us) = result?;
    Ok(MappedOutcome { server_cpu_ns, frames, latency_us, published })
}

/// A started `nerve foxglove`, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Outcome {
    server_cpu_ns: u64,
    client_msgs: [u64; 2],
    latency_us: [[Option<f64>; 2]; 2],
    spy_cpu_ns: u64,
    spy_msgs: u64,
    published: (u64, u64),
}

fn measure(nerve: &Path, seconds: f64) -> Result<Outcome, String> {
    let url = url();
    let (pose, image) = messages()?;
    let bus = Bus::new(Some(&url)).map_err(|e| format!("{url}: {e}"))?;
    let stop_publishing = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&stop_publishing);
    let publisher = std::thread::spawn(move || publish(bus, pose, image, s));
    let result = (|| {
        let types = types_args();
        let (server, addr) = start_server(nerve, &url)?;
        let addr = addr.as_str();
        let (ready_tx, ready) = mpsc::channel();
        let stop_client = Arc::new(AtomicBool::new(false));
        let (a, s) = (addr.to_owned(), Arc::clone(&stop_client));
        let client = std::thread::spawn(move || client(&a, ready_tx, s));
        let subscribed = ready.recv_timeout(Duration::from_secs(10));
        if subscribed.is_err() {
            stop_client.store(true, Ordering::Release);
            return Err(client.join().map_err(|_| "client panicked")?.err().unwrap_or("never subscribed".into()));
        }
        std::thread::sleep(Duration::from_millis(300));

        let mut spy = Command::new(nerve)
            .args(["spy", "--json", "--duration", &seconds.to_string(), "--url", &url])
            .args(&types)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting nerve spy: {e}"))?;
        let (from, cpu0) = (now_us(), process_cpu_ns(server.0.id())?);
        let mut spy_out = String::new();
        spy.stdout.take().ok_or("no stdout")?.read_to_string(&mut spy_out).map_err(|e| e.to_string())?;
        let spy_cpu_ns = wait_cpu_ns(&mut spy)?;
        let (to, cpu1) = (now_us(), process_cpu_ns(server.0.id())?);
        std::thread::sleep(Duration::from_millis(200));
        stop_client.store(true, Ordering::Release);
        let seen = client.join().map_err(|_| "client panicked")??;
        drop(server);
        let report: serde_json::Value =
            serde_json::from_str(spy_out.trim()).map_err(|e| format!("nerve spy said {spy_out:?}: {e}"))?;
        let spy_msgs = report["total"].as_u64().ok_or(format!("no total in {report}"))?;
        let mut client_msgs = [0; 2];
        let mut latency_us = [[None; 2]; 2];
        for (ch, list) in seen.iter().enumerate() {
            let mut lat: Vec<u64> = list.iter().filter(|(at, _)| (from..to).contains(at)).map(|&(_, l)| l).collect();
            client_msgs[ch] = lat.len() as u64;
            latency_us[ch] = [percentile(&mut lat, 0.5), percentile(&mut lat, 0.99)];
        }
        Ok((cpu1 - cpu0, client_msgs, latency_us, spy_cpu_ns, spy_msgs))
    })();
    stop_publishing.store(true, Ordering::Release);
    let published = publisher.join().map_err(|_| "publisher panicked")?;
    let (server_cpu_ns, client_msgs, latency_us, spy_cpu_ns, spy_msgs) = result?;
    Ok(Outcome { server_cpu_ns, client_msgs, latency_us, spy_cpu_ns, spy_msgs, published })
}

struct Out {
    json: bool,
}

impl Out {
    fn text(&self, s: &str) {
        if !self.json {
            println!("{s}");
        }
    }
    fn row(&self, text: String, value: serde_json::Value) {
        if self.json {
            println!("{value}");
        } else {
            println!("{text}");
        }
    }
}

/// Runs the suite; the exit code.
pub fn run(quick: bool, json: bool) -> i32 {
    let out = Out { json };
    let seconds = if quick { 1.5 } else { 10.0 };
    out.text(&format!(
        "foxglove: {CASE} on udpm, one Foxglove client subscribed to both; nerve foxglove vs nerve spy --once on the \
         same traffic, {seconds} s (bench/README.md, \"foxglove\")"
    ));
    out.text(&format!(
        "load average at start: {}",
        std::fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    ));
    out.text("foxglove_bridge publishes no CPU-per-message or latency figures to compare with (bench/README.md)");
    let nerve = std::env::current_exe()
        .ok()
        .map(|e| e.with_file_name("nerve"))
        .filter(|p| p.exists())
        .ok_or_else(|| "no nerve binary next to nerve-bench (cargo build --release -p nerve-cli)".to_string());
    let outcome = nerve.clone().and_then(|n| measure(&n, seconds));
    let o = match outcome {
        Ok(o) => o,
        Err(reason) => {
            for system in ["nerve foxglove", "nerve spy --once"] {
                out.row(
                    format!("{system:<18} unavailable: {reason}"),
                    json!({"suite": "foxglove", "case": CASE, "system": system, "status": "unavailable",
                           "reason": reason}),
                );
            }
            out.row(
                format!("{:<18} unavailable ({MAPPED_CASE}): {reason}", "nerve foxglove"),
                json!({"suite": "foxglove", "case": MAPPED_CASE, "system": "nerve foxglove", "status": "unavailable",
                       "reason": reason}),
            );
            return 0;
        }
    };
    let nerve_path = &nerve.expect("measured, so found");
    let server_msgs = o.client_msgs[0] + o.client_msgs[1];
    let server_us = o.server_cpu_ns as f64 / 1e3 / server_msgs.max(1) as f64;
    let spy_us = o.spy_cpu_ns as f64 / 1e3 / o.spy_msgs.max(1) as f64;
    out.text(&format!("published: {} poses, {} images", o.published.0, o.published.1));
    out.text(&format!(
        "{:<18} {:>10} {:>12} {:>14} {:>14} {:>14} {:>14}",
        "system", "messages", "CPU µs/msg", "pose p50 µs", "pose p99 µs", "image p50 µs", "image p99 µs"
    ));
    let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
    let [[pose50, pose99], [image50, image99]] = o.latency_us;
    out.row(
        format!(
            "{:<18} {server_msgs:>10} {server_us:>12.2} {:>14} {:>14} {:>14} {:>14}",
            "nerve foxglove",
            f(pose50),
            f(pose99),
            f(image50),
            f(image99)
        ),
        json!({"suite": "foxglove", "case": CASE, "system": "nerve foxglove", "messages": server_msgs,
               "pose_messages": o.client_msgs[0], "image_messages": o.client_msgs[1],
               "cpu_us_per_msg": server_us, "pose_latency_p50_us": pose50, "pose_latency_p99_us": pose99,
               "image_latency_p50_us": image50, "image_latency_p99_us": image99}),
    );
    out.row(
        format!(
            "{:<18} {:>10} {spy_us:>12.2} {:>14} {:>14} {:>14} {:>14}",
            "nerve spy --once", o.spy_msgs, "-", "-", "-", "-"
        ),
        json!({"suite": "foxglove", "case": CASE, "system": "nerve spy --once", "messages": o.spy_msgs,
               "cpu_us_per_msg": spy_us}),
    );
    let ratio = server_us / spy_us;
    out.row(
        format!("CPU per message, nerve foxglove / nerve spy --once: {ratio:.2}x"),
        json!({"suite": "foxglove", "kind": "ratio", "case": CASE, "metric": "cpu_us_per_msg",
               "definition": "nerve foxglove / nerve spy --once", "value": ratio}),
    );
    mapped_rows(&out, nerve_path, if quick { 1.0 } else { seconds });
    0
}

/// The mapped case's row: `nerve foxglove` sending the image as foxglove.RawImage to one client.
fn mapped_rows(out: &Out, nerve: &Path, seconds: f64) {
    out.text(&format!(
        "{MAPPED_CASE}: exlcm.image_t mono8 on udpm, one client subscribed to {MAPPED_TOPIC} only, {seconds} s"
    ));
    match measure_mapped(nerve, seconds) {
        Ok(m) => {
            let cpu_us = m.server_cpu_ns as f64 / 1e3 / m.frames.max(1) as f64;
            let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
            out.text(&format!("published: {} images", m.published));
            out.text(&format!(
                "{:<18} {:>10} {:>14} {:>14} {:>14}",
                "system", "frames", "CPU µs/frame", "p50 µs", "p99 µs"
            ));
            out.row(
                format!(
                    "{:<18} {:>10} {cpu_us:>14.1} {:>14} {:>14}",
                    "nerve foxglove",
                    m.frames,
                    f(m.latency_us[0]),
                    f(m.latency_us[1])
                ),
                json!({"suite": "foxglove", "case": MAPPED_CASE, "system": "nerve foxglove", "frames": m.frames,
                       "cpu_us_per_frame": cpu_us, "latency_p50_us": m.latency_us[0],
                       "latency_p99_us": m.latency_us[1]}),
            );
        }
        Err(reason) => out.row(
            format!("{:<18} unavailable: {reason}", "nerve foxglove"),
            json!({"suite": "foxglove", "case": MAPPED_CASE, "system": "nerve foxglove", "status": "unavailable",
                   "reason": reason}),
        ),
    }
}
