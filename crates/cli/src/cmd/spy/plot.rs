//! Plots in `nerve spy` (lcm-spy's chart): numeric fields of the open message, picked in a list of its numeric
//! leaves, drawn over the last [`Plots::window_s`] seconds, several fields (of one or more channels) on one chart.
//!
//! The chart samples each plotted channel's newest message once per screen refresh, when it changed, so decoding
//! stays where the spy keeps it (at the refresh rate, never per message received): a 1 kHz channel is drawn as
//! about ten points a second, the way an oscilloscope's roll mode shows a fast signal.

use std::collections::VecDeque;

use nerve_types::dynamic::Value;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, List, ListItem, ListState};
use ratatui::Frame;

/// The fields one chart shows at most (beyond that the lines are too many to tell apart).
pub const MAX_FIELDS: usize = 8;

/// Elements of one array offered for plotting (the rest of a long array are left out of the list).
const MAX_ARRAY_ELEMS: usize = 16;

/// The window's bounds, seconds, and its default.
const WINDOW_S: (f64, f64, f64) = (2.0, 300.0, 10.0);

/// Samples kept per field at most (beyond the window's needs at the refresh rate, a bound on memory).
const MAX_SAMPLES: usize = 4096;

const COLORS: [Color; MAX_FIELDS] = [
    Color::Cyan,
    Color::Yellow,
    Color::Magenta,
    Color::Green,
    Color::LightRed,
    Color::LightBlue,
    Color::White,
    Color::Red,
];

/// Every numeric leaf of a decoded message: its path (`position[0]`, `waypoints[1].x`) and value. Booleans count
/// (as 0 and 1); strings and byte arrays do not.
pub fn numeric_fields(value: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

fn walk(v: &Value, path: String, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Struct(sv) => {
            for (name, f) in &sv.fields {
                let p = if path.is_empty() { name.to_string() } else { format!("{path}.{name}") };
                walk(f, p, out);
            }
        }
        Value::Array(items) => {
            for (i, e) in items.iter().take(MAX_ARRAY_ELEMS).enumerate() {
                walk(e, format!("{path}[{i}]"), out);
            }
        }
        other => {
            if let Some(x) = number(other) {
                out.push((path, x));
            }
        }
    }
}

fn number(v: &Value) -> Option<f64> {
    Some(match v {
        Value::Int8(x) => f64::from(*x),
        Value::Int16(x) => f64::from(*x),
        Value::Int32(x) => f64::from(*x),
        Value::Int64(x) => *x as f64,
        Value::Float(x) => f64::from(*x),
        Value::Double(x) => *x,
        Value::Byte(x) => f64::from(*x),
        Value::Boolean(b) => f64::from(u8::from(*b)),
        Value::Enum(e) => f64::from(e.value),
        _ => return None,
    })
}

/// One plotted field and its recent samples (receive time in microseconds since the epoch, value).
#[derive(Debug)]
struct Field {
    channel: String,
    path: String,
    samples: VecDeque<(i64, f64)>,
}

/// The plotted fields.
#[derive(Debug)]
pub struct Plots {
    fields: Vec<Field>,
    /// How many seconds the chart spans.
    pub window_s: f64,
    /// Per plotted channel, the sequence number of the message sampled last (so a message is sampled once).
    sampled: Vec<(String, u64)>,
}

impl Default for Plots {
    fn default() -> Plots {
        Plots { fields: Vec::new(), window_s: WINDOW_S.2, sampled: Vec::new() }
    }
}

impl Plots {
    /// Whether nothing is plotted.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Whether `channel`'s `path` is plotted.
    pub fn is_on(&self, channel: &str, path: &str) -> bool {
        self.fields.iter().any(|f| f.channel == channel && f.path == path)
    }

    /// Plots `channel`'s `path`, or stops plotting it; false when the chart is full.
    pub fn toggle(&mut self, channel: &str, path: &str) -> bool {
        if let Some(i) = self.fields.iter().position(|f| f.channel == channel && f.path == path) {
            self.fields.remove(i);
        } else if self.fields.len() < MAX_FIELDS {
            self.fields.push(Field { channel: channel.into(), path: path.into(), samples: VecDeque::new() });
        } else {
            return false;
        }
        self.sampled.retain(|(c, _)| self.fields.iter().any(|f| &f.channel == c));
        true
    }

    /// Stops plotting everything.
    pub fn clear(&mut self) {
        self.fields.clear();
        self.sampled.clear();
    }

    /// Widens (`factor` > 1) or narrows the window, within its bounds.
    pub fn zoom(&mut self, factor: f64) {
        self.window_s = (self.window_s * factor).clamp(WINDOW_S.0, WINDOW_S.1);
    }

    /// The channels plotted, each once.
    pub fn channels(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in &self.fields {
            if !out.contains(&f.channel) {
                out.push(f.channel.clone());
            }
        }
        out
    }

    /// Whether message `seq` of `channel` still needs sampling.
    pub fn wants(&self, channel: &str, seq: u64) -> bool {
        !self.sampled.iter().any(|(c, s)| c == channel && *s == seq)
    }

    /// Records `channel`'s message `seq`, received at `recv_utime`, whose numeric fields are `values`.
    pub fn record(&mut self, channel: &str, seq: u64, recv_utime: i64, values: &[(String, f64)]) {
        match self.sampled.iter_mut().find(|(c, _)| c == channel) {
            Some(s) => s.1 = seq,
            None => self.sampled.push((channel.to_owned(), seq)),
        }
        for f in self.fields.iter_mut().filter(|f| f.channel == channel) {
            if let Some((_, x)) = values.iter().find(|(p, _)| *p == f.path) {
                if f.samples.len() == MAX_SAMPLES {
                    f.samples.pop_front();
                }
                f.samples.push_back((recv_utime, *x));
            }
        }
    }

    /// Forgets samples older than the window at `now`.
    pub fn trim(&mut self, now: i64) {
        let oldest = now - (self.window_s * 1e6) as i64;
        for f in &mut self.fields {
            while f.samples.front().is_some_and(|(t, _)| *t < oldest) {
                f.samples.pop_front();
            }
        }
    }

    /// Draws the chart of the last window at `now` into `area`.
    pub fn draw(&self, frame: &mut Frame<'_>, area: Rect, now: i64) {
        let window = self.window_s;
        let points: Vec<Vec<(f64, f64)>> = self
            .fields
            .iter()
            .map(|f| {
                f.samples.iter().map(|(t, x)| ((t - now) as f64 / 1e6, *x)).filter(|(t, _)| *t >= -window).collect()
            })
            .collect();
        let finite = points.iter().flatten().map(|p| p.1).filter(|y| y.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| (lo.min(y), hi.max(y)));
        let (lo, hi) = if !lo.is_finite() {
            (-1.0, 1.0)
        } else if hi == lo {
            (lo - 1.0, hi + 1.0)
        } else {
            (lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05)
        };
        let datasets: Vec<Dataset<'_>> = self
            .fields
            .iter()
            .zip(&points)
            .enumerate()
            .map(|(i, (f, pts))| {
                Dataset::default()
                    .name(format!("{} {}", f.channel, f.path))
                    .marker(Marker::Braille)
                    .graph_type(GraphType::Line)
                    .style(Style::new().fg(COLORS[i % COLORS.len()]))
                    .data(pts)
            })
            .collect();
        let x_labels =
            vec![Span::raw(format!("-{window:.0} s")), Span::raw(format!("-{:.0} s", window / 2.0)), Span::raw("now")];
        let y_labels = vec![Span::raw(short(lo)), Span::raw(short((lo + hi) / 2.0)), Span::raw(short(hi))];
        let chart = Chart::new(datasets)
            .block(Block::bordered().title(format!(" plot: last {window:.0} s  (+/- zoom) ")))
            .x_axis(Axis::default().bounds([-window, 0.0]).labels(x_labels).style(Style::new().fg(Color::Gray)))
            .y_axis(Axis::default().bounds([lo, hi]).labels(y_labels).style(Style::new().fg(Color::Gray)))
            .hidden_legend_constraints((
                ratatui::layout::Constraint::Ratio(1, 1),
                ratatui::layout::Constraint::Ratio(1, 2),
            ));
        frame.render_widget(chart, area);
    }
}

/// A number short enough for an axis label.
fn short(x: f64) -> String {
    if x != 0.0 && (x.abs() >= 1e5 || x.abs() < 1e-2) {
        format!("{x:.2e}")
    } else {
        format!("{x:.2}")
    }
}

/// Draws the list of `channel`'s numeric fields (`[x]` when plotted), the one at `cursor` highlighted.
pub fn draw_fields(
    frame: &mut Frame<'_>,
    area: Rect,
    channel: &str,
    fields: &[(String, f64)],
    cursor: usize,
    plots: &Plots,
) {
    let items: Vec<ListItem<'_>> = fields
        .iter()
        .map(|(path, x)| {
            let mark = if plots.is_on(channel, path) { "[x]" } else { "[ ]" };
            ListItem::new(Line::from(format!("{mark} {path}: {x}")))
        })
        .collect();
    let list = List::new(items)
        .block(Block::bordered().title(format!(" {channel}: numeric fields  (Space: plot) ")))
        .highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("> ");
    let mut state = ListState::default().with_selected(Some(cursor.min(fields.len().saturating_sub(1))));
    frame.render_stateful_widget(list, area, &mut state);
}

#[cfg(test)]
mod tests {
    use super::*;
    use nerve_types::dynamic::StructValue;

    fn pose() -> Value {
        let point =
            |x: f64| Value::Struct(StructValue { ty: "p".into(), fields: vec![("x".into(), Value::Double(x))] });
        Value::Struct(StructValue {
            ty: "pose".into(),
            fields: vec![
                ("utime".into(), Value::Int64(7)),
                ("name".into(), Value::String("a".into())),
                ("position".into(), Value::Array(vec![Value::Float(0.5), Value::Float(-1.0)])),
                ("raw".into(), Value::Bytes(vec![1, 2])),
                ("ok".into(), Value::Boolean(true)),
                ("path".into(), Value::Array(vec![point(1.5), point(2.5)])),
                ("long".into(), Value::Array((0..100).map(Value::Int32).collect())),
            ],
        })
    }

    #[test]
    fn numeric_fields_are_the_numeric_leaves_by_path() {
        let fields = numeric_fields(&pose());
        let paths: Vec<&str> = fields.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(&paths[..6], ["utime", "position[0]", "position[1]", "ok", "path[0].x", "path[1].x"]);
        assert_eq!(fields[2].1, -1.0);
        assert_eq!(fields.len(), 6 + MAX_ARRAY_ELEMS, "long arrays offer their first elements only");
    }

    #[test]
    fn a_message_is_sampled_once_and_old_samples_leave_the_window() {
        let mut plots = Plots::default();
        assert!(plots.toggle("POSE", "utime"));
        let values = vec![("utime".to_owned(), 1.0)];
        assert!(plots.wants("POSE", 1));
        plots.record("POSE", 1, 0, &values);
        assert!(!plots.wants("POSE", 1));
        plots.record("POSE", 2, 5_000_000, &values);
        plots.trim(12_000_000);
        assert_eq!(plots.fields[0].samples.len(), 1);
        assert!(plots.toggle("POSE", "utime"));
        assert!(plots.is_empty() && plots.channels().is_empty());
    }

    #[test]
    fn the_chart_holds_at_most_max_fields() {
        let mut plots = Plots::default();
        for i in 0..MAX_FIELDS {
            assert!(plots.toggle("C", &format!("f{i}")));
        }
        assert!(!plots.toggle("C", "one more"));
        assert_eq!(plots.channels(), ["C"]);
    }

    /// The whole screen with two fields of SCAN plotted, rendered into ratatui's `TestBackend`: the fields list
    /// marks them, the chart has its legend and points; tiny and zero-size terminals draw without panicking.
    #[test]
    fn the_fields_screen_and_the_chart_render() {
        use std::sync::{Arc, Mutex};

        use nerve_bus::Received;
        use ratatui::backend::TestBackend;
        use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
        use ratatui::Terminal;

        use super::super::decode::tests::{encode, seed_types};
        use super::super::engine::lock;
        use super::super::stats::Table;
        use super::super::ui::{App, Mode};

        const T0: i64 = 1_700_000_000_000_000;
        let types = seed_types();
        let table = Mutex::new(Table::default());
        let mut app = App::new("memq://".into());
        let press = |app: &mut App, code| app.key(KeyEvent::new(code, KeyModifiers::NONE));
        let render = |app: &mut App, w: u16, h: u16| {
            let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
            term.draw(|f| app.draw(f)).unwrap();
            let buf = term.backend().buffer().clone();
            (0..buf.area.height)
                .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let scan = |i: i64| {
            let json =
                format!(r#"{{"utime": {i}, "nranges": 2, "ranges": [{}, 1.0], "rad0": 0, "radstep": 0.5}}"#, i % 7);
            encode(&types, "exlcm.laser_t", &json)
        };
        let put = |i: i64| {
            let msg = Received {
                channel: "SCAN".into(),
                data: scan(i),
                recv_utime: T0 + i * 100_000,
                origin: nerve_bus::Origin::Transport,
            };
            lock(&table).record(Arc::new(msg), &types);
        };
        put(0);
        app.update(&table, &types, T0);
        press(&mut app, KeyCode::Enter);
        app.update(&table, &types, T0);
        press(&mut app, KeyCode::Char('f'));
        assert_eq!(app.mode(), Mode::Fields);
        // utime, nranges, ranges[0], ranges[1], rad0, radstep: plot ranges[0] and radstep.
        for code in [KeyCode::Down, KeyCode::Down, KeyCode::Char(' '), KeyCode::Down, KeyCode::Down, KeyCode::Down] {
            press(&mut app, code);
        }
        press(&mut app, KeyCode::Char(' '));
        for i in 1..40 {
            put(i);
            app.update(&table, &types, T0 + i * 100_000);
        }
        let screen = render(&mut app, 100, 40);
        for want in
            ["[x] ranges[0]: ", "[x] radstep: 0.5", "[ ] utime", "plot: last 10 s", "SCAN ranges[0]", "SCAN radstep"]
        {
            assert!(screen.contains(want), "no {want:?} in\n{screen}");
        }
        let points = screen.chars().filter(|c| ('\u{2801}'..='\u{28ff}').contains(c)).count();
        assert!(points > 20, "{points} braille cells in\n{screen}");
        for (w, h) in [(0, 0), (1, 1), (12, 4), (30, 8)] {
            render(&mut app, w, h);
        }
        press(&mut app, KeyCode::Esc);
        assert_eq!(app.mode(), Mode::Detail);
        assert!(render(&mut app, 100, 40).contains("plot: last 10 s"), "the chart stays under the message");
    }
}
