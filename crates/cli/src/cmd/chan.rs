//! `nerve chan mk|rm|ls|dump|chmod`: Ach's `ach mk/rm/chmod/dump` for shared-memory channels, used through
//! nerve-shm directly (no bus).
//!
//! Channels are named by their bus channel name (`POSE`, `robot/arm`): the file is `nerve-` followed by the name
//! encoded as the `shm://` provider encodes it (`/` and `%` percent-encoded), so `nerve chan` and `--url shm://`
//! buses agree on every name, and `ls` shows the names decoded. Every subcommand takes `--dir` (default:
//! `NERVE_SHM_DIR`, else `/dev/shm`). Exit status: 0 done, 1 refused (no such channel, it exists already, a bad
//! name, size or mode, `dump --count` not reached), 2 any other failure (permissions, a damaged file).

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use nerve_shm::{
    decode_channel, encode_channel, parse_mode, parse_size, Channel, ChannelConfig, ChannelStats, GetOutcome,
    MessageInfo, ReadMode, ShmError, Wait, DEFAULT_FRAMES, DEFAULT_FRAME_SIZE,
};
use nerve_types::dynamic::json_string;
use nerve_types::Registry;

use super::receive_args::ReceiveArgs;
use super::sub::{decoded_text, fingerprint_json, hex, push_decoded_json};

/// What `nerve chan --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve chan mk CAMERA/left --frames 8 --frame-size 2M --mode 660   # a channel for 2 MiB images
  nerve chan ls                                                     # sizes, mode, messages, writers and readers
  nerve chan dump POSE --types examples/types                       # each message as it arrives, decoded
  nerve chan chmod POSE 640 && nerve chan rm POSE

EXIT STATUS: 0 done; 1 refused (no such channel, it exists already, a bad name, size or mode, dump --count not
reached); 2 any other failure (permissions, a damaged file).";

/// Arguments of `nerve chan`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
    /// The channel directory [default: NERVE_SHM_DIR, else /dev/shm].
    #[arg(long, global = true, value_name = "DIR")]
    dir: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Make a channel. A channel of that name that exists already is an error (with other sizes always; with the
    /// same sizes unless --exist-ok).
    #[command(after_help = "EXAMPLES:\n  nerve chan mk CAMERA/left --frames 8 --frame-size 2M --mode 660\n  \
                      nerve chan mk POSE --exist-ok")]
    Mk(MkArgs),
    /// Remove channels. Processes that have one open keep using it; new ones no longer find it.
    #[command(after_help = "EXAMPLES:\n  nerve chan rm POSE CAMERA/left\n  nerve chan rm --force MAYBE")]
    Rm(RmArgs),
    /// List every channel: sizes, mode, messages published since it was made (which is also the newest sequence
    /// number: they run 1, 2, ...), writers and readers made on it since then, readers sleeping on it now, and
    /// recoveries from writers that died holding its lock.
    #[command(after_help = "EXAMPLES:\n  nerve chan ls\n  nerve chan ls --json --dir /tmp/channels")]
    Ls(LsArgs),
    /// Print a channel's messages as they arrive (decoded with --types).
    #[command(after_help = "EXAMPLES:\n  nerve chan dump POSE --types examples/types\n  \
                      nerve chan dump POSE --from-oldest --count 10 --json")]
    Dump(DumpArgs),
    /// Set a channel file's permission bits.
    #[command(after_help = "EXAMPLES:\n  nerve chan chmod POSE 640")]
    Chmod(ChmodArgs),
}

#[derive(clap::Args)]
struct MkArgs {
    /// The channel (its bus channel name).
    name: String,
    /// How many messages it keeps (its index entries, at least 2).
    #[arg(long, short = 'n', default_value_t = DEFAULT_FRAMES)]
    frames: u64,
    /// The largest message in bytes (suffixes K, M, G); the data ring holds max(frames, 3) of them.
    #[arg(long, value_name = "BYTES", value_parser = size_arg, default_value_t = DEFAULT_FRAME_SIZE)]
    frame_size: u64,
    /// Permission bits, octal.
    #[arg(long, value_parser = mode_arg, default_value = "600")]
    mode: u32,
    /// Succeed if the channel exists already with the same sizes.
    #[arg(long)]
    exist_ok: bool,
    /// Give every frame an xxh3 checksum that readers check, so bytes another process scribbled over are never
    /// taken for a message (costs a hash of every message on both sides).
    #[arg(long)]
    checksum: bool,
}

#[derive(clap::Args)]
struct RmArgs {
    /// The channels.
    #[arg(required = true)]
    names: Vec<String>,
    /// No error for a channel that does not exist.
    #[arg(long, short = 'f')]
    force: bool,
}

#[derive(clap::Args)]
struct LsArgs {
    /// One JSON object per channel, one per line.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct DumpArgs {
    /// The channel.
    name: String,
    /// Start with the oldest message the channel still holds (default: only messages put from now on).
    #[arg(long)]
    from_oldest: bool,
    #[command(flatten)]
    receive: ReceiveArgs,
}

#[derive(clap::Args)]
struct ChmodArgs {
    /// The channel.
    name: String,
    /// Permission bits, octal (e.g. 660).
    #[arg(value_parser = mode_arg)]
    mode: u32,
}

fn size_arg(text: &str) -> Result<u64, String> {
    parse_size(text).ok_or_else(|| format!("'{text}' is not a size in bytes (digits, optionally K, M or G)"))
}

fn mode_arg(text: &str) -> Result<u32, String> {
    parse_mode(text).ok_or_else(|| format!("'{text}' is not octal permission bits up to 777"))
}

/// Whether the error is the user's request being refused (exit status 1) rather than a failure (2).
fn refused(e: &ShmError) -> bool {
    matches!(
        e,
        ShmError::InvalidName { .. }
            | ShmError::InvalidConfig { .. }
            | ShmError::NotFound { .. }
            | ShmError::AlreadyExists { .. }
            | ShmError::SizeMismatch { .. }
    )
}

/// Reports a refusal on stderr as status 1, or passes a failure on (status 2).
fn report(cmd: &str, name: &str, e: ShmError) -> anyhow::Result<ExitCode> {
    if refused(&e) {
        eprintln!("nerve chan {cmd}: channel {name}: {e}");
        Ok(ExitCode::from(1))
    } else {
        Err(anyhow::Error::new(e).context(format!("chan {cmd}: channel {name}")))
    }
}

/// Runs `nerve chan`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = nerve_shm::channel_dir(args.dir.as_deref());
    match args.command {
        Sub::Mk(a) => mk(a, dir),
        Sub::Rm(a) => rm(a, dir),
        Sub::Ls(a) => ls(a, dir),
        Sub::Dump(a) => dump(a, dir),
        Sub::Chmod(a) => match Channel::set_mode(&encode_channel(&a.name), Some(&dir), a.mode) {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) => report("chmod", &a.name, e),
        },
    }
}

fn mk(a: MkArgs, dir: PathBuf) -> anyhow::Result<ExitCode> {
    let config = ChannelConfig::new(a.frames, a.frame_size).mode(a.mode).dir(&dir).checksum(a.checksum);
    let name = encode_channel(&a.name);
    match Channel::create(&name, &config) {
        Ok(ch) => {
            let s = ch.stats();
            println!(
                "made channel {}: {} frames of {} bytes ({} data bytes), mode {:04o}{}, {}",
                a.name,
                s.frames,
                s.frame_size,
                s.data_bytes,
                s.mode,
                if s.checksum { ", checksums" } else { "" },
                ch.path().display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(ShmError::AlreadyExists { path }) if a.exist_ok => {
            let mode = Channel::open(&name, Some(&dir)).map(|c| c.stats().mode).ok();
            let note = match mode {
                Some(m) if m != a.mode => format!(" (its mode is {m:04o}, not {:04o}: see nerve chan chmod)", a.mode),
                _ => String::new(),
            };
            println!("channel {} exists already with these sizes{note}, {}", a.name, path.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(ShmError::AlreadyExists { path }) => {
            eprintln!(
                "nerve chan mk: channel {} exists already ({}; --exist-ok accepts it when the sizes match)",
                a.name,
                path.display()
            );
            Ok(ExitCode::from(1))
        }
        Err(e) => report("mk", &a.name, e),
    }
}

fn rm(a: RmArgs, dir: PathBuf) -> anyhow::Result<ExitCode> {
    let mut code = ExitCode::SUCCESS;
    for name in &a.names {
        match Channel::remove(&encode_channel(name), Some(&dir)) {
            Ok(()) => {}
            Err(ShmError::NotFound { .. }) if a.force => {}
            Err(e) => {
                if report("rm", name, e)? != ExitCode::SUCCESS {
                    code = ExitCode::from(1);
                }
            }
        }
    }
    Ok(code)
}

/// A listed channel's name for people: its bus channel name, or the raw nerve-shm name if no bus name encodes
/// to it.
fn display_name(raw: &str) -> String {
    decode_channel(raw).unwrap_or_else(|| raw.to_owned())
}

fn ls(a: LsArgs, dir: PathBuf) -> anyhow::Result<ExitCode> {
    if !dir.is_dir() {
        eprintln!("nerve chan ls: {}: no such directory", dir.display());
        return Ok(ExitCode::from(1));
    }
    let listed = Channel::list(Some(&dir)).with_context(|| format!("listing {}", dir.display()))?;
    let mut out = std::io::stdout().lock();
    if a.json {
        for c in &listed {
            writeln!(out, "{}", ls_json(&c.name, &c.path, &c.stats))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let header =
        ["NAME", "FRAMES", "FRAME SIZE", "DATA", "MODE", "MESSAGES", "WRITERS", "READERS", "SLEEPING", "RECOVERIES"];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    let mut errors = Vec::new();
    let mut damaged = Vec::new();
    for c in &listed {
        let name = display_name(&c.name);
        match &c.stats {
            Ok(s) => rows.push(vec![
                name,
                s.frames.to_string(),
                s.frame_size.to_string(),
                s.data_bytes.to_string(),
                format!("{:04o}", s.mode),
                s.messages.to_string(),
                s.writer_opens.to_string(),
                s.reader_opens.to_string(),
                s.waiting_readers.to_string(),
                s.recoveries.to_string(),
            ]),
            // Damage found by Channel::check: say how to recover.
            Err(e @ ShmError::Corrupt { .. }) => {
                damaged.push(format!("{name}: {e} (recover: nerve chan rm {name}, then nerve chan mk {name})"))
            }
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    let widths: Vec<usize> =
        (0..header.len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    for r in &rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i == 0 {
                let _ = write!(line, "{cell:<w$}", w = widths[0]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = widths[i]);
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    for d in damaged {
        writeln!(out, "damaged: {d}")?;
    }
    for e in errors {
        writeln!(out, "unreadable: {e}")?;
    }
    Ok(ExitCode::SUCCESS)
}

fn ls_json(raw: &str, path: &std::path::Path, stats: &Result<ChannelStats, ShmError>) -> String {
    let channel = decode_channel(raw).map_or("null".to_owned(), |c| json_string(&c));
    let mut s = format!(
        "{{\"name\": {}, \"channel\": {channel}, \"file\": {}",
        json_string(raw),
        json_string(&path.display().to_string())
    );
    match stats {
        Ok(st) => {
            let _ = write!(
                s,
                ", \"frames\": {}, \"frame_size\": {}, \"data_bytes\": {}, \"file_bytes\": {}, \"mode\": \"{:04o}\", \
                 \"messages\": {}, \"newest_seq\": {}, \"writers_seen\": {}, \"readers_seen\": {}, \
                 \"sleeping_readers\": {}, \"recoveries\": {}, \"aborted_loans\": {}, \"created_utime\": {}}}",
                st.frames,
                st.frame_size,
                st.data_bytes,
                st.file_bytes,
                st.mode,
                st.messages,
                st.messages,
                st.writer_opens,
                st.reader_opens,
                st.waiting_readers,
                st.recoveries,
                st.aborted_loans,
                st.created_utime
            );
        }
        Err(e) => {
            let _ = write!(s, ", \"error\": {}}}", json_string(&e.to_string()));
        }
    }
    s
}

fn dump(a: DumpArgs, dir: PathBuf) -> anyhow::Result<ExitCode> {
    let registry = a.receive.registry()?;
    let ch = match Channel::open(&encode_channel(&a.name), Some(&dir)) {
        Ok(ch) => ch,
        Err(e) => return report("dump", &a.name, e),
    };
    let mut reader = if a.from_oldest { ch.reader_from_oldest() } else { ch.reader_after_newest() };
    let deadline = a.receive.deadline();
    let mut out = std::io::stdout().lock();
    let (mut seen, mut missed) = (0u64, 0u64);
    while a.receive.wants_more(seen) {
        // Wake at least once a second even without a deadline (nothing to do then but wait again).
        let slice = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left.min(Duration::from_secs(1)),
                _ => break,
            },
            None => Duration::from_secs(1),
        };
        let got = reader
            .get_with(ReadMode::Next, Wait::Timeout(slice), |bytes| bytes.to_vec())
            .with_context(|| format!("reading channel {}", a.name))?;
        let GetOutcome::Message((info, data)) = got else { continue };
        seen += 1;
        missed += info.missed;
        let line = if a.receive.json {
            dump_json(&info, &data, registry.as_ref())
        } else {
            dump_text(&info, &data, registry.as_ref(), a.receive.full)
        };
        writeln!(out, "{line}")?;
        out.flush()?;
    }
    if missed > 0 {
        eprintln!("nerve chan dump: {missed} messages were overwritten before they could be read");
    }
    Ok(a.receive.exit_status_because("nerve chan dump", seen, "timed out"))
}

fn utime_text(utime: i64) -> String {
    format!("{}.{:06}", utime.div_euclid(1_000_000), utime.rem_euclid(1_000_000))
}

fn dump_text(info: &MessageInfo, data: &[u8], registry: Option<&Registry>, full: bool) -> String {
    let head =
        format!("seq {} at {} {} bytes missed {}", info.seq, utime_text(info.put_utime), data.len(), info.missed);
    format!("{head}{}", decoded_text(data, registry, full))
}

fn dump_json(info: &MessageInfo, data: &[u8], registry: Option<&Registry>) -> String {
    let mut line = format!(
        "{{\"seq\": {}, \"put_utime\": {}, \"size\": {}, \"missed\": {}, \"origin\": \"0x{:016x}\", \"fingerprint\": {}, \
         \"data_hex\": \"{}\"",
        info.seq,
        info.put_utime,
        data.len(),
        info.missed,
        info.origin,
        fingerprint_json(data),
        hex(data)
    );
    push_decoded_json(&mut line, data, registry);
    line.push('}');
    line
}
