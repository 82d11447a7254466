//! `nerve foxglove` end to end: the binary on an shm bus the test publishes on, and its page in headless Chromium
//! (puppeteer-core, `crates/foxglove/tests/node/browser.mjs`): the channel table's rows and a plot's points are
//! checked against the traffic; a camera (`exlcm.image_t`) and a laser (`exlcm.laser_t`), which the server maps to
//! `foxglove.RawImage` and `foxglove.LaserScan`, are drawn: the canvas' pixels are the image's, and the scan plot
//! has the scan's points; a camera sending JPEG (MJPEG pixel format, `foxglove.CompressedImage`) is decoded by the
//! browser into its two colours. Screenshots of the page are kept (`target/tmp/foxglove-page.png`, with the scan, and
//! `foxglove-page-image.png`, with the image).

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{nerve, text, types_dir, Guard, TestDir};
use nerve_bus::Bus;
use nerve_types::{Registry, TypeName};

fn foxglove_tests() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../foxglove/tests")
}

/// Starts `nerve foxglove` on `url` with the test types, on any free port; returns the guard and the address.
fn start_server(url: &str) -> (Guard, String) {
    let mut child = nerve()
        .args(["foxglove", "--url", url, "--listen", "127.0.0.1:0", "--types"])
        .arg(foxglove_tests().join("data"))
        .args(["--types", &types_dir()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.split("http://").nth(1).and_then(|s| s.split('/').next()).unwrap_or_default().to_owned();
    assert!(!addr.is_empty(), "no address in {line:?}");
    (Guard(Some(child)), addr)
}

/// The camera's picture: 16x12 RGB, each pixel's channels from its position (so a flipped, shifted or scaled
/// drawing shows), as `exlcm.image_t` (Camunits' RGB code) and as the RGBA the canvas must hold.
fn camera() -> (String, Vec<u8>) {
    let (w, h) = (16usize, 12usize);
    let mut rgb = Vec::new();
    for y in 0..h {
        for x in 0..w {
            rgb.extend_from_slice(&[(x * 16) as u8, (y * 21) as u8, ((x * 7 + y * 13) % 256) as u8]);
        }
    }
    let rgba: Vec<u8> = rgb.chunks(3).flat_map(|p| [p[0], p[1], p[2], 255]).collect();
    let json = format!(
        r#"{{"utime":1700000000000000,"width":{w},"height":{h},"pixelformat":859981650,"size":{},"data":{:?}}}"#,
        rgb.len(),
        rgb
    );
    (json, rgba)
}

/// Two more cameras, 4x2, whose pixels are exact however they are converted: UYVY of grey pixels (U = V = 128,
/// so RGB = Y) and an RGGB Bayer mosaic whose two greens in each 2x2 cell are equal (so the cell's mean green is
/// one of them). As `(channel, exlcm.image_t JSON, RGBA the canvas must hold)`.
fn more_cameras() -> Vec<(&'static str, String, Vec<u8>)> {
    let ys = [10u8, 60, 110, 160, 200, 220, 240, 255];
    let uyvy: Vec<u8> = ys.chunks(2).flat_map(|p| [128, p[0], 128, p[1]]).collect();
    let uyvy_rgba: Vec<u8> = ys.iter().flat_map(|&y| [y, y, y, 255]).collect();
    // Cells (left, right): R 200 G 100 B 30, then R 5 G 250 B 90; rows: R G R G / G B G B.
    let bayer = vec![200, 100, 5, 250, 100, 30, 250, 90];
    let cell = |r: u8, g: u8, b: u8| [r, g, b, 255, r, g, b, 255];
    let bayer_rgba: Vec<u8> = [cell(200, 100, 30), cell(5, 250, 90)].repeat(2).concat();
    let json = |code: i32, data: &[u8]| {
        format!(
            r#"{{"utime":1700000000000000,"width":4,"height":2,"pixelformat":{code},"size":{},"data":{data:?}}}"#,
            data.len()
        )
    };
    vec![("CAMERA_UYVY", json(1498831189, &uyvy), uyvy_rgba), ("CAMERA_BAYER", json(878205016, &bayer), bayer_rgba)]
}

/// The laser's scan: 12 beams from -1.2 rad, 0.2 rad apart, at 1 m + 0.25 m per beam (exact in f32).
const SCAN: (f32, f32, [f32; 12]) = (-1.2, 0.2, [1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75]);

#[test]
fn the_page_shows_the_table_and_plots_what_was_published() {
    let node = foxglove_tests().join("node");
    assert!(node.join("node_modules/puppeteer-core").is_dir(), "run scripts/setup (npm ci in {})", node.display());
    let dir = TestDir::new("foxglove", "page");
    let (server, addr) = start_server(&dir.url());

    // POSE at 50 Hz: position[0] walks 0, 0.5, ... 9.5 and position[1] = -position[0]; MYSTERY, of no known type.
    let (reg, diags) = Registry::load_dirs(&[foxglove_tests().join("data"), PathBuf::from(types_dir())]);
    assert!(!diags.has_errors(), "{}", diags.render());
    let name = TypeName::parse("foxtest.pose_t");
    let poses: Vec<Vec<u8>> = (0..20)
        .map(|k| {
            let x = k as f64 * 0.5;
            let json = format!(
                r#"{{"utime":{k},"position":[{x:.1},{:.1},1.0],"q":[1.0,0.0,0.0,0.0],"frame":"map","counts":[{k}],
                   "waypoints":[{{"x":0.0,"y":0.0}},{{"x":1.0,"y":1.0}}],"ok":true,"raw":[1,2]}}"#,
                -x
            );
            reg.encode(&name, &reg.from_json(&name, &json).unwrap()).unwrap()
        })
        .collect();
    // CAMERA and LIDAR at 10 Hz: the server sends them as foxglove.RawImage and foxglove.LaserScan too.
    let (image_json, image_rgba) = camera();
    let image_t = TypeName::parse("exlcm.image_t");
    let image = reg.encode(&image_t, &reg.from_json(&image_t, &image_json).unwrap()).unwrap();
    let (rad0, radstep, ranges) = SCAN;
    let laser_t = TypeName::parse("exlcm.laser_t");
    let laser_json = format!(
        r#"{{"utime":1700000000000000,"nranges":{},"ranges":{ranges:?},"rad0":{rad0},"radstep":{radstep}}}"#,
        ranges.len()
    );
    let laser = reg.encode(&laser_t, &reg.from_json(&laser_t, &laser_json).unwrap()).unwrap();
    // A 16x8 JPEG, red on the left and blue on the right (Chromium's encoder, quality 0.95), as MJPEG.
    let jpeg = std::fs::read(foxglove_tests().join("data/red-blue.jpg")).unwrap();
    let jpeg_json = format!(
        r#"{{"utime":1700000000000000,"width":16,"height":8,"pixelformat":1196444237,"size":{},"data":{jpeg:?}}}"#,
        jpeg.len()
    );
    let jpeg_image = reg.encode(&image_t, &reg.from_json(&image_t, &jpeg_json).unwrap()).unwrap();
    let more: Vec<(&str, Vec<u8>, Vec<u8>)> = more_cameras()
        .into_iter()
        .map(|(ch, json, rgba)| (ch, reg.encode(&image_t, &reg.from_json(&image_t, &json).unwrap()).unwrap(), rgba))
        .collect();
    let more_images: Vec<serde_json::Value> = more
        .iter()
        .map(|(ch, _, rgba)| {
            serde_json::json!({"channel": ch, "topic": format!("{ch}/foxglove.RawImage"), "width": 4, "height": 2,
                               "rgba": rgba})
        })
        .collect();
    let more_bytes: Vec<(&str, Vec<u8>)> = more.into_iter().map(|(ch, bytes, _)| (ch, bytes)).collect();
    // The scan's points as the page must plot them, worked out here in f64 from the f32 values published.
    let scan_points: Vec<[f64; 2]> = ranges
        .iter()
        .enumerate()
        .map(|(i, &r)| {
            let a = f64::from(rad0) + i as f64 * f64::from(radstep);
            [f64::from(r) * a.cos(), f64::from(r) * a.sin()]
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let (bus, s) = (Bus::new(Some(&dir.url())).unwrap(), Arc::clone(&stop));
    let publisher = std::thread::spawn(move || {
        let mut k = 0;
        while !s.load(Ordering::Acquire) {
            bus.publish_raw("POSE", &poses[k % poses.len()]).unwrap();
            if k % 5 == 0 {
                bus.publish_raw("MYSTERY", &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1, 9]).unwrap();
                bus.publish_raw("CAMERA", &image).unwrap();
                bus.publish_raw("LIDAR", &laser).unwrap();
                bus.publish_raw("CAMERA_JPEG", &jpeg_image).unwrap();
                for (channel, bytes) in &more_bytes {
                    bus.publish_raw(channel, bytes).unwrap();
                }
            }
            k += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
    });

    let spec = serde_json::json!({
        "channel": "POSE",
        "type": "foxtest.pose_t",
        // 50 Hz published; the machine is shared, so the bounds are wide.
        "minRate": 20, "maxRate": 80,
        "fields": {
            "position[0]": (0..20).map(|k| k as f64 * 0.5).collect::<Vec<_>>(),
            "position[1]": (0..20).map(|k| -(k as f64) * 0.5).collect::<Vec<_>>(),
        },
        "otherRows": ["MYSTERY", "CAMERA", "LIDAR", "CAMERA_JPEG", "CAMERA_UYVY", "CAMERA_BAYER"],
        "minPoints": 40,
        "timeoutMs": 40000,
        "images": [
            {"channel": "CAMERA", "topic": "CAMERA/foxglove.RawImage", "width": 16, "height": 12, "rgba": image_rgba},
            more_images[0], more_images[1],
        ],
        "scan": {"channel": "LIDAR", "topic": "LIDAR/foxglove.LaserScan", "points": scan_points},
        // JPEG is lossy: the pixels away from the edge between the colours, within 24 of each channel.
        "jpeg": {"channel": "CAMERA_JPEG", "topic": "CAMERA_JPEG/foxglove.CompressedImage", "width": 16, "height": 8,
                 "tolerance": 24,
                 "pixels": [[1, 1, [255, 0, 0]], [5, 6, [255, 0, 0]], [10, 2, [0, 0, 255]], [14, 6, [0, 0, 255]]]},
    });
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("foxglove-page.png");
    let image_shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("foxglove-page-image.png");
    let started = Instant::now();
    let out = Command::new("node")
        .arg("browser.mjs")
        .arg(format!("http://{addr}/"))
        .arg(&spec_path)
        .arg(&shot)
        .current_dir(&node)
        .output()
        .expect("node runs");
    stop.store(true, Ordering::Release);
    publisher.join().unwrap();
    drop(server);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "browser test failed after {:?}: {stdout}\nstderr: {}",
        started.elapsed(),
        text(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(result["points"].as_u64().unwrap() >= 40, "{result}");
    let pixels: Vec<u64> = result["images"].as_array().unwrap().iter().map(|i| i["pixels"].as_u64().unwrap()).collect();
    assert_eq!(pixels, [16 * 12, 8, 8], "{result}");
    assert_eq!(result["scan"]["points"], 12, "{result}");
    assert_eq!(result["jpeg"]["checked"], 4, "{result}");
    assert_eq!(result["cloud"], serde_json::json!([[1.5, -2.25], [-0.5, 3]]), "{result}");
    for shot in [&shot, &image_shot] {
        assert!(shot.metadata().unwrap().len() > 10_000, "screenshot {} is missing or empty", shot.display());
    }
    println!("screenshots: {} (the scan), {} (the image)", shot.display(), image_shot.display());
    println!("the pictures' checks took {} ms of {:?}", result["picturesMs"], started.elapsed());
}
