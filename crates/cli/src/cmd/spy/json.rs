//! `nerve spy --once`: the table's statistics printed once, as JSON (`--json`) for scripts or as aligned text.

use nerve_types::dynamic::json_string;

use super::stats::{Drops, Row};
use super::ui::{bandwidth_text, jitter_text};

/// What one `--once` run saw.
pub struct Report<'a> {
    /// The bus URL.
    pub url: &'a str,
    /// How long it listened, seconds.
    pub duration_s: f64,
    /// One row per channel, in the order to print.
    pub rows: &'a [Row],
    /// Messages counted on all channels.
    pub total: u64,
    /// Messages lost before they were counted.
    pub drops: Drops,
}

fn number(x: f64) -> String {
    // Finite by construction (the statistics guard their divisions); 3 decimals are plenty for rates and sizes.
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "null".into()
    }
}

impl Report<'_> {
    /// One JSON object: `url`, `duration_s`, `total`, `dropped` {`queue_overflow`, `transport_lost`, `malformed`,
    /// `kernel_dropped`},
    /// and `channels`, each with `channel`, `type` (null when unknown), `fingerprint` (hex string; null under 8
    /// bytes), `count`, `bytes`, `last_size`, `rate_hz`, `jitter_us`, `bandwidth_bps` and `decode_errors`.
    pub fn to_json(&self) -> String {
        let channels: Vec<String> = self
            .rows
            .iter()
            .map(|r| {
                format!(
                    "{{\"channel\": {}, \"type\": {}, \"fingerprint\": {}, \"count\": {}, \"bytes\": {}, \"last_size\": {}, \
                     \"rate_hz\": {}, \"jitter_us\": {}, \"bandwidth_bps\": {}, \"decode_errors\": {}}}",
                    json_string(&r.channel),
                    r.type_name.as_deref().map_or("null".into(), json_string),
                    r.fingerprint.map_or("null".into(), |f| format!("\"0x{f:016x}\"")),
                    r.count,
                    r.bytes,
                    r.last_size,
                    number(r.figures.rate_hz),
                    number(r.figures.jitter_us),
                    number(r.figures.bandwidth_bps),
                    r.decode_errors,
                )
            })
            .collect();
        let d = self.drops;
        format!(
            "{{\"url\": {}, \"duration_s\": {}, \"total\": {}, \"dropped\": {{\"queue_overflow\": {}, \"transport_lost\": {}, \
             \"malformed\": {}, \"kernel_dropped\": {}}}, \"channels\": [{}]}}",
            json_string(self.url),
            number(self.duration_s),
            self.total,
            d.queue_overflow,
            d.transport_lost,
            d.malformed,
            d.kernel_dropped,
            channels.join(", ")
        )
    }

    /// The table as aligned text, a header line first and a summary line last.
    pub fn to_text(&self) -> String {
        let header = ["CHANNEL", "TYPE", "COUNT", "RATE Hz", "JITTER", "BANDWIDTH", "ERRORS"];
        let mut lines: Vec<[String; 7]> = vec![header.map(String::from)];
        for r in self.rows {
            lines.push([
                r.channel.clone(),
                r.type_label(),
                r.count.to_string(),
                format!("{:.1}", r.figures.rate_hz),
                jitter_text(&r.figures),
                bandwidth_text(r.figures.bandwidth_bps),
                r.decode_errors.to_string(),
            ]);
        }
        let widths: Vec<usize> =
            (0..7).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
        let mut out = String::new();
        for l in &lines {
            let cells: Vec<String> = l
                .iter()
                .enumerate()
                .map(|(c, s)| if c < 2 { format!("{s:<w$}", w = widths[c]) } else { format!("{s:>w$}", w = widths[c]) })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        let d = self.drops;
        out.push_str(&format!(
            "{} channels, {} messages in {:.1} s on {}; dropped: {} queue overflow, {} lost in transport, {} malformed, {} dropped by the kernel\n",
            self.rows.len(),
            self.total,
            self.duration_s,
            self.url,
            d.queue_overflow,
            d.transport_lost,
            d.malformed,
            d.kernel_dropped
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::spy::stats::WindowFigures;

    fn rows() -> Vec<Row> {
        vec![
            Row {
                channel: "SCAN".into(),
                type_name: Some("exlcm.laser_t".into()),
                fingerprint: Some(0x18f4_8ab4_4e6f_d954),
                count: 20,
                bytes: 14800,
                last_size: 740,
                decode_errors: 0,
                figures: WindowFigures { rate_hz: 10.0, jitter_us: 250.6, bandwidth_bps: 7400.0 },
            },
            Row {
                channel: "RAW\"X".into(),
                type_name: None,
                fingerprint: None,
                count: 1,
                bytes: 3,
                last_size: 3,
                decode_errors: 0,
                figures: WindowFigures::default(),
            },
        ]
    }

    #[test]
    fn json_has_every_field_and_escapes_names() {
        let rows = rows();
        let r = Report { url: "memq://", duration_s: 2.0, rows: &rows, total: 21, drops: Drops::default() };
        assert_eq!(
            r.to_json(),
            "{\"url\": \"memq://\", \"duration_s\": 2.000, \"total\": 21, \"dropped\": {\"queue_overflow\": 0, \
             \"transport_lost\": 0, \"malformed\": 0, \"kernel_dropped\": 0}, \"channels\": [{\"channel\": \"SCAN\", \"type\": \"exlcm.laser_t\", \
             \"fingerprint\": \"0x18f48ab44e6fd954\", \"count\": 20, \"bytes\": 14800, \"last_size\": 740, \"rate_hz\": 10.000, \
             \"jitter_us\": 250.600, \"bandwidth_bps\": 7400.000, \"decode_errors\": 0}, {\"channel\": \"RAW\\\"X\", \
             \"type\": null, \"fingerprint\": null, \"count\": 1, \"bytes\": 3, \"last_size\": 3, \"rate_hz\": 0.000, \
             \"jitter_us\": 0.000, \"bandwidth_bps\": 0.000, \"decode_errors\": 0}]}"
        );
    }

    #[test]
    fn text_is_aligned() {
        let rows = rows();
        let d = Drops { queue_overflow: 1, transport_lost: 2, malformed: 3, kernel_dropped: 4 };
        let r = Report { url: "memq://", duration_s: 2.0, rows: &rows, total: 21, drops: d };
        let text = r.to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "CHANNEL  TYPE               COUNT  RATE Hz  JITTER  BANDWIDTH  ERRORS");
        assert_eq!(lines[1], "SCAN     exlcm.laser_t         20     10.0  251 µs  7.2 KiB/s       0");
        assert_eq!(lines[2], "RAW\"X    ? (under 8 bytes)      1      0.0       -      0 B/s       0");
        assert_eq!(
            lines[3],
            "2 channels, 21 messages in 2.0 s on memq://; dropped: 1 queue overflow, 2 lost in transport, 3 malformed, \
             4 dropped by the kernel"
        );
    }
}
