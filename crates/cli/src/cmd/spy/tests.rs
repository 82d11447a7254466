//! The spy as a person sees it: the whole screen rendered into ratatui's `TestBackend` from a known set of
//! channels (header, rows, sorting, selection, the decoded tree), and the counting engine under 100,000 messages
//! per second over `memq://` with the table rendered while traffic flows.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_bus::{Bus, Origin, Received};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;

use super::decode::tests::{encode, laser_json, seed_types};
use super::decode::Types;
use super::engine::{lock, Engine};
use super::stats::Table;
use super::ui::{App, Flow, Mode};

const T0: i64 = 1_700_000_000_000_000;

fn screen(app: &mut App, width: u16, height: u16) -> Vec<String> {
    let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
    term.draw(|f| app.draw(f)).unwrap();
    let buf = term.backend().buffer();
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>().trim_end().to_owned())
        .collect()
}

fn press(app: &mut App, code: KeyCode) -> Flow {
    app.key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn put(table: &Mutex<Table>, types: &Types, channel: &str, t: i64, data: Vec<u8>) {
    lock(table)
        .record(Arc::new(Received { channel: channel.into(), data, recv_utime: t, origin: Origin::Transport }), types);
}

/// SCAN: laser_t at 10 Hz (20 messages); PATH: path_t at 2 Hz (4); IMAGE: image_t 3 KiB at 30 Hz (60);
/// MYSTERY: an unknown fingerprint at 1 Hz (2). All end by T0 + 2 s.
fn known_channels(types: &Types) -> Mutex<Table> {
    let table = Mutex::new(Table::default());
    let laser = encode(types, "exlcm.laser_t", &laser_json());
    let path = encode(types, "exlcm.path_t", r#"{"timestamp": 9, "waypoints": [{"id": "home", "position": [1, 2]}]}"#);
    let pixels = vec!["7"; 3072].join(",");
    let image = encode(
        types,
        "exlcm.image_t",
        &format!(r#"{{"utime": 1, "width": 64, "height": 48, "pixelformat": 0, "size": 3072, "data": [{pixels}]}}"#),
    );
    let mut mystery = 0x0123_4567_89ab_cdefu64.to_be_bytes().to_vec();
    mystery.extend([1, 2, 3, 4]);
    for i in 0..60 {
        put(&table, types, "IMAGE", T0 + 2_000_000 - (59 - i) * 33_333, image.clone());
    }
    for i in 0..20 {
        put(&table, types, "SCAN", T0 + 100_000 + i * 100_000, laser.clone());
    }
    for i in 0..4 {
        put(&table, types, "PATH", T0 + 500_000 + i * 500_000, path.clone());
    }
    for i in 0..2 {
        put(&table, types, "MYSTERY", T0 + 1_000_000 + i * 1_000_000, mystery.clone());
    }
    table
}

/// The channel names in the order the table shows them.
fn order(lines: &[String]) -> Vec<String> {
    lines[2..]
        .iter()
        .filter_map(|l| l.trim_start_matches("> ").split_whitespace().next().map(str::to_owned))
        .filter(|w| ["IMAGE", "SCAN", "PATH", "MYSTERY"].contains(&w.as_str()))
        .collect()
}

#[test]
fn table_shows_header_rows_and_help() {
    let types = seed_types();
    let table = known_channels(&types);
    let mut app = App::new("memq://".into());
    app.update(&table, &types, T0 + 2_000_000);
    let lines = screen(&mut app, 110, 10);
    assert_eq!(lines[0], "nerve spy  memq://  4 channels  86 msgs  no drops");
    for col in ["Channel ▲", "Type", "Count", "Rate Hz", "Jitter", "Bandwidth", "Errors"] {
        assert!(lines[1].contains(col), "header lacks {col}: {}", lines[1]);
    }
    let scan = lines.iter().find(|l| l.contains("SCAN")).unwrap();
    let cells: Vec<&str> = scan.split_whitespace().collect();
    assert_eq!(cells, ["SCAN", "exlcm.laser_t", "20", "10.0", "0", "µs", "7.3", "KiB/s", "0"], "{scan}");
    let mystery = lines.iter().find(|l| l.contains("MYSTERY")).unwrap();
    assert!(mystery.contains("? 0x0123456789abcdef"), "{mystery}");
    assert!(lines[9].starts_with("↑↓/jk select  Enter open  sort: n name"), "{}", lines[9]);
    // Sorted by name, the first row selected.
    assert_eq!(order(&lines), ["IMAGE", "MYSTERY", "PATH", "SCAN"]);
    assert!(lines[2].starts_with("> IMAGE"), "{}", lines[2]);
}

#[test]
fn sort_keys_change_the_order_and_again_reverse_it() {
    let types = seed_types();
    let table = known_channels(&types);
    let mut app = App::new("memq://".into());
    app.update(&table, &types, T0 + 2_000_000);
    press(&mut app, KeyCode::Char('r'));
    let lines = screen(&mut app, 110, 10);
    assert_eq!(order(&lines), ["IMAGE", "SCAN", "PATH", "MYSTERY"]);
    assert!(lines[1].contains("Rate Hz ▼"), "{}", lines[1]);
    press(&mut app, KeyCode::Char('r'));
    let lines = screen(&mut app, 110, 10);
    assert_eq!(order(&lines), ["MYSTERY", "PATH", "SCAN", "IMAGE"]);
    assert!(lines[1].contains("Rate Hz ▲"), "{}", lines[1]);
    press(&mut app, KeyCode::Char('c'));
    assert_eq!(order(&screen(&mut app, 110, 10)), ["IMAGE", "SCAN", "PATH", "MYSTERY"]);
    press(&mut app, KeyCode::Char('b'));
    assert_eq!(order(&screen(&mut app, 110, 10)), ["IMAGE", "SCAN", "PATH", "MYSTERY"]);
    press(&mut app, KeyCode::Char('n'));
    assert_eq!(order(&screen(&mut app, 110, 10)), ["IMAGE", "MYSTERY", "PATH", "SCAN"]);
    // The order survives a refresh.
    press(&mut app, KeyCode::Char('n'));
    app.update(&table, &types, T0 + 2_000_000);
    assert_eq!(order(&screen(&mut app, 110, 10)), ["SCAN", "PATH", "MYSTERY", "IMAGE"]);
}

#[test]
fn selection_follows_the_channel_and_enter_shows_the_decoded_tree() {
    let types = seed_types();
    let table = known_channels(&types);
    let mut app = App::new("memq://".into());
    app.update(&table, &types, T0 + 2_000_000);
    for _ in 0..3 {
        press(&mut app, KeyCode::Char('j'));
    }
    press(&mut app, KeyCode::Down); // past the end: stays on the last row
    assert_eq!(app.selected(), Some("SCAN"));
    press(&mut app, KeyCode::Up);
    assert_eq!(app.selected(), Some("PATH"));
    press(&mut app, KeyCode::Char('k'));
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('j'));
    // Re-sorting moves the row, not the selection.
    press(&mut app, KeyCode::Char('c'));
    assert_eq!(app.selected(), Some("SCAN"));
    let lines = screen(&mut app, 110, 10);
    assert!(lines[3].starts_with("> SCAN"), "{lines:#?}");

    press(&mut app, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::Detail);
    app.update(&table, &types, T0 + 2_050_000);
    let lines = screen(&mut app, 100, 16);
    assert!(lines[1].contains(" SCAN "), "{lines:#?}");
    assert!(lines[2].contains("exlcm.laser_t"), "{lines:#?}");
    assert!(lines[3].contains("message #20  748 bytes  0.1 s ago  |  20 msgs  10.0 Hz"), "{lines:#?}");
    let body: Vec<String> =
        lines[5..10].iter().map(|l| l.trim_start_matches('│').trim_end_matches('│').trim().to_owned()).collect();
    assert_eq!(
        body,
        [
            "utime: 1700000000000000",
            "nranges: 180",
            "ranges: float[180] [0.1, 0.2, 0.3, …] min 0.1 max 18.0",
            "rad0: -1.5707964",
            "radstep: 0.017453292",
        ]
    );
    assert!(lines[15].starts_with("↑↓/jk scroll"), "{}", lines[15]);

    // Live: a newer message replaces the tree at the next refresh.
    let newer = encode(&types, "exlcm.laser_t", &laser_json().replace("1700000000000000", "1700000000000042"));
    put(&table, &types, "SCAN", T0 + 2_100_000, newer);
    app.update(&table, &types, T0 + 2_100_000);
    let lines = screen(&mut app, 100, 16);
    assert!(lines[3].contains("message #21"), "{lines:#?}");
    assert!(lines[5].contains("utime: 1700000000000042"), "{lines:#?}");

    assert_eq!(press(&mut app, KeyCode::Esc), Flow::Continue);
    assert_eq!(app.mode(), Mode::Table);
    assert_eq!(press(&mut app, KeyCode::Char('q')), Flow::Quit);
}

#[test]
fn a_known_fingerprint_that_does_not_decode_is_an_error_once() {
    let types = seed_types();
    let table = Mutex::new(Table::default());
    let mut laser = encode(&types, "exlcm.laser_t", &laser_json());
    laser.truncate(200); // above the least size, below what nranges says
    put(&table, &types, "BROKEN", T0, laser.clone());
    put(&table, &types, "BROKEN", T0 + 1000, laser[..20].to_vec()); // below the least size: caught on arrival
    put(&table, &types, "BROKEN", T0 + 2000, laser);
    assert_eq!(lock(&table).channel("BROKEN").unwrap().decode_errors, 1);
    let mut app = App::new("memq://".into());
    app.update(&table, &types, T0 + 3000);
    press(&mut app, KeyCode::Enter);
    app.update(&table, &types, T0 + 3000);
    app.update(&table, &types, T0 + 4000); // the same message again: counted once
    let lines = screen(&mut app, 120, 8);
    assert!(lines[2].contains("exlcm.laser_t: decode error"), "{lines:#?}");
    assert_eq!(lock(&table).channel("BROKEN").unwrap().decode_errors, 2);
    press(&mut app, KeyCode::Esc);
    app.update(&table, &types, T0 + 4000);
    let lines = screen(&mut app, 120, 8);
    assert!(lines[2].starts_with("> BROKEN") && lines[2].ends_with(" 2"), "{lines:#?}");
}

#[test]
fn drops_are_named_in_the_title_when_there_are_some() {
    let types = seed_types();
    let table = known_channels(&types);
    lock(&table).drops = super::stats::Drops { queue_overflow: 12, transport_lost: 3, malformed: 1, kernel_dropped: 5 };
    let mut app = App::new("memq://".into());
    app.update(&table, &types, T0 + 2_000_000);
    let lines = screen(&mut app, 110, 10);
    assert_eq!(lines[0], "nerve spy  memq://  4 channels  86 msgs  DROPPED: 12 queue, 3 lost, 1 malformed, 5 kernel");
}

#[test]
fn unknown_types_show_the_fingerprint_and_first_bytes() {
    let types = Types::new(None);
    let table = Mutex::new(Table::default());
    put(&table, &types, "X", T0, (0u8..40).collect());
    let mut app = App::new("memq://".into());
    app.update(&table, &types, T0);
    press(&mut app, KeyCode::Enter);
    app.update(&table, &types, T0);
    let lines = screen(&mut app, 130, 8);
    assert!(lines[2].contains("unknown type: fingerprint 0x0001020304050607"), "{lines:#?}");
    assert!(lines[5].contains("first bytes: 00 01 02"), "{lines:#?}");
}

#[test]
fn empty_tiny_and_zero_size_terminals() {
    let types = seed_types();
    let empty = Mutex::new(Table::default());
    let mut app = App::new("memq://".into());
    app.update(&empty, &types, T0);
    let lines = screen(&mut app, 80, 6);
    assert!(lines[3].contains("no messages yet"), "{lines:#?}");
    assert_eq!(press(&mut app, KeyCode::Enter), Flow::Continue);
    assert_eq!(app.mode(), Mode::Table, "nothing to open");
    let table = known_channels(&types);
    app.update(&table, &types, T0 + 2_000_000);
    for (w, h) in [(0, 0), (1, 1), (5, 2), (20, 3), (200, 1)] {
        screen(&mut app, w, h);
        press(&mut app, KeyCode::Enter);
        app.update(&table, &types, T0 + 2_000_000);
        screen(&mut app, w, h);
        press(&mut app, KeyCode::End);
        screen(&mut app, w, h);
        press(&mut app, KeyCode::Esc);
    }
}

#[test]
fn detail_scrolls_within_the_tree() {
    let types = seed_types();
    let table = Mutex::new(Table::default());
    let wps: Vec<String> = (0..3).map(|i| format!(r#"{{"id": "w{i}", "position": [0, 0]}}"#)).collect();
    let path = encode(&types, "exlcm.path_t", &format!(r#"{{"timestamp": 1, "waypoints": [{}]}}"#, wps.join(",")));
    put(&table, &types, "PATH", T0, path);
    let mut app = App::new("memq://".into());
    app.update(&table, &types, T0);
    press(&mut app, KeyCode::Enter);
    app.update(&table, &types, T0);
    // 10 lines of tree, 3 visible.
    let first = screen(&mut app, 60, 10);
    assert!(first[5].trim_start_matches('│').trim_start().starts_with("timestamp: 1"), "{first:#?}");
    press(&mut app, KeyCode::Char('j'));
    let lines = screen(&mut app, 60, 10);
    assert!(lines[5].contains("num_waypoints: 3"), "{lines:#?}");
    press(&mut app, KeyCode::End);
    let lines = screen(&mut app, 60, 10);
    assert!(lines[7].contains("position: float[2] [0.0, 0.0]"), "{lines:#?}");
    press(&mut app, KeyCode::Home);
    assert_eq!(screen(&mut app, 60, 10), first);
}

/// 100,000 messages per second for 2 s through `memq://` on three channels while the table is rendered to a
/// `TestBackend` every 100 ms. Counts must be exact; the frame times are printed, not asserted.
#[test]
fn engine_counts_every_message_at_100k_per_second() {
    const RATE: u64 = 100_000;
    const TOTAL: u64 = 200_000;
    let types = Arc::new(seed_types());
    let bus = Bus::new(Some("memq://")).unwrap();
    // A queue that holds the whole run, so a descheduled counting thread cannot lose messages here.
    let engine = Engine::start(&bus, ".*", TOTAL as usize, Arc::clone(&types)).unwrap();
    let small = encode(&types, "exlcm.path_t", r#"{"timestamp": 1, "waypoints": []}"#);
    let laser = encode(&types, "exlcm.laser_t", &laser_json());
    let publisher = {
        let (bus, small, laser) = (bus.clone(), small.clone(), laser.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            for i in 0..TOTAL {
                // Paced in steps of 1000 messages; bounded by the count, and by 60 s should the machine stall.
                if i % 1000 == 0 {
                    let due = start + Duration::from_micros(i * 1_000_000 / RATE);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    if start.elapsed() > Duration::from_secs(60) {
                        return (i, start.elapsed());
                    }
                }
                match i % 4 {
                    0 | 1 => bus.publish_raw("FAST", &small).unwrap(),
                    2 => bus.publish_raw("SCAN", &laser).unwrap(),
                    _ => bus.publish_raw(&format!("CH{}", i % 3), &small).unwrap(),
                }
            }
            (TOTAL, start.elapsed())
        })
    };
    let mut app = App::new("memq://".into());
    let mut term = Terminal::new(TestBackend::new(120, 30)).unwrap();
    let mut frames = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while !publisher.is_finished() && Instant::now() < deadline {
        let t = Instant::now();
        app.update(engine.table(), &types, super::stats::now_utime());
        term.draw(|f| app.draw(f)).unwrap();
        frames.push(t.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
    let (published, took) = publisher.join().unwrap();
    assert_eq!(published, TOTAL, "the publisher stalled for a minute");
    let table = engine.finish();
    let t = lock(&table);
    assert_eq!(t.total, TOTAL);
    assert_eq!(t.drops.queue_overflow, 0);
    assert_eq!(t.channel("FAST").unwrap().count, TOTAL / 2);
    assert_eq!(t.channel("SCAN").unwrap().count, TOTAL / 4);
    let ch: u64 = ["CH0", "CH1", "CH2"].iter().map(|c| t.channel(c).unwrap().count).sum();
    assert_eq!(ch, TOTAL / 4);
    assert_eq!(t.channel("SCAN").unwrap().bytes, TOTAL / 4 * laser.len() as u64);
    frames.sort();
    let ms = |d: &Duration| d.as_secs_f64() * 1e3;
    println!(
        "spy engine: {TOTAL} messages published in {:.2} s ({:.0}/s), all counted; {} frames rendered meanwhile \
         (update + draw, 120x30): median {:.2} ms, max {:.2} ms",
        took.as_secs_f64(),
        TOTAL as f64 / took.as_secs_f64(),
        frames.len(),
        frames.get(frames.len() / 2).map_or(0.0, ms),
        frames.last().map_or(0.0, ms),
    );
}
