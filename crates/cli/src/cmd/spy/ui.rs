//! `nerve spy`'s terminal UI, built the way ratatui's own examples are: a model ([`App`]: the sorted rows, the
//! selection, the decoded tree of the open channel; no terminal code), a view ([`App::draw`]: a pure render into
//! a frame, which tests point at ratatui's `TestBackend`) and input ([`App::key`]). [`run`] is the only part that
//! touches the real terminal.
//!
//! The loop refreshes the model [`REFRESH`]ly (and after every key): it copies the rows out of the statistics
//! table under its lock, and decodes only the open channel's newest message, only when it is a new one.

use std::cmp::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row as TableRow, Table as TableWidget, TableState};
use ratatui::Frame;

use super::decode::{Decoded, Types};
use super::engine::lock;
use super::plot::{self, Plots};
use super::stats::{now_utime, Drops, Row, Table, WindowFigures};

/// How often the screen is refreshed when no key is pressed.
pub const REFRESH: Duration = Duration::from_millis(100);

/// The column the table is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Channel name, A to Z.
    Name,
    /// Messages received, most first.
    Count,
    /// Rate, highest first.
    Rate,
    /// Bandwidth, highest first.
    Bandwidth,
}

/// Which screen is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The table of channels.
    Table,
    /// The open channel's newest message, decoded.
    Detail,
    /// The open message's numeric fields, to pick those to plot.
    Fields,
}

/// What a key asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep going.
    Continue,
    /// Leave the spy.
    Quit,
}

/// The open channel's newest message as shown.
#[derive(Debug, Clone, Default)]
struct Detail {
    channel: String,
    /// The message's sequence number on its channel (its count when it arrived); 0 before the first decode.
    seq: u64,
    size: usize,
    recv_utime: i64,
    /// The type line, or what stopped the decoding.
    status: String,
    lines: Vec<String>,
    /// The numeric leaves (path, value), offered for plotting.
    fields: Vec<(String, f64)>,
}

/// The model: everything the screen shows.
pub struct App {
    title: String,
    sort: SortKey,
    reversed: bool,
    rows: Vec<Row>,
    drops: Drops,
    total: u64,
    now: i64,
    selected: Option<String>,
    mode: Mode,
    scroll: usize,
    detail: Detail,
    /// Lines of tree that fit on the screen last time (for paging).
    page: usize,
    /// The plotted fields and their samples.
    plots: Plots,
    /// The field under the cursor on the fields screen.
    field_cursor: usize,
}

impl App {
    /// An empty model; `title` heads the screen (e.g. the URL).
    pub fn new(title: String) -> App {
        App {
            title,
            sort: SortKey::Name,
            reversed: false,
            rows: Vec::new(),
            drops: Drops::default(),
            total: 0,
            now: 0,
            selected: None,
            mode: Mode::Table,
            scroll: 0,
            detail: Detail::default(),
            page: 10,
            plots: Plots::default(),
            field_cursor: 0,
        }
    }

    /// Which screen is up.
    #[cfg(test)]
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The selected channel.
    #[cfg(test)]
    pub fn selected(&self) -> Option<&str> {
        self.selected.as_deref()
    }

    /// Takes fresh rows from the table at time `now` (microseconds since the epoch) and, on the detail screen,
    /// decodes the open channel's newest message if it changed. A message of a known type that does not decode is
    /// reported back to the table as a decode error.
    pub fn update(&mut self, table: &Mutex<Table>, types: &Types, now: i64) {
        let (latest, to_plot) = {
            let t = lock(table);
            self.rows = t.rows(now);
            self.drops = t.drops;
            self.total = t.total;
            let open = if self.mode != Mode::Table { self.selected.as_deref() } else { None };
            let latest = open
                .and_then(|c| t.channel(c))
                .map(|ch| (ch.latest.clone(), ch.count, ch.latest_too_short, ch.ty.clone()));
            let to_plot: Vec<_> = self
                .plots
                .channels()
                .iter()
                .filter_map(|c| t.channel(c))
                .filter(|ch| self.plots.wants(&ch.latest.channel, ch.count))
                .map(|ch| (ch.latest.clone(), ch.count))
                .collect();
            (latest, to_plot)
        };
        self.now = now;
        self.sample_plots(&to_plot, types, now);
        self.sort_rows();
        self.keep_selection();
        let Some((msg, seq, too_short, ty)) = latest else { return };
        if self.detail.channel == msg.channel && self.detail.seq == seq {
            return;
        }
        let mut detail = Detail {
            channel: msg.channel.clone(),
            seq,
            size: msg.data.len(),
            recv_utime: msg.recv_utime,
            ..Detail::default()
        };
        match (too_short, ty) {
            (true, Some(ty)) => {
                detail.status = format!(
                    "{}: decode error: {} bytes is shorter than any message of this type ({} bytes at least)",
                    ty.label,
                    msg.data.len(),
                    ty.min_len
                );
            }
            _ => match types.decode(&msg.data) {
                Decoded::Value(info, value) => {
                    detail.status = info.label.clone();
                    detail.lines = types.tree(&value);
                    detail.fields = plot::numeric_fields(&value);
                }
                Decoded::Error(info, e) => {
                    detail.status = format!("{}: decode error: {e}", info.label);
                    lock(table).report_decode_failure(&msg.channel, seq);
                }
                Decoded::Unknown(fp) => {
                    detail.status = format!("unknown type: fingerprint 0x{fp:016x} is in none of the --types files");
                    detail.lines = vec![format!("first bytes: {}", hex_head(&msg.data, 32))];
                }
                Decoded::NoFingerprint => {
                    detail.status = format!("{} bytes: too short to hold a fingerprint", msg.data.len());
                    detail.lines = vec![format!("bytes: {}", hex_head(&msg.data, 32))];
                }
            },
        }
        if detail.channel != self.detail.channel {
            self.scroll = 0;
        }
        self.detail = detail;
    }

    /// Samples the plotted channels' newest messages (each once), and forgets samples older than the window.
    fn sample_plots(&mut self, newest: &[(std::sync::Arc<nerve_bus::Received>, u64)], types: &Types, now: i64) {
        for (msg, seq) in newest {
            let fields = match types.decode(&msg.data) {
                Decoded::Value(_, value) => plot::numeric_fields(&value),
                _ => Vec::new(),
            };
            self.plots.record(&msg.channel, *seq, msg.recv_utime, &fields);
        }
        self.plots.trim(now);
    }

    fn sort_rows(&mut self) {
        let by = |a: &Row, b: &Row| -> Ordering {
            let key = match self.sort {
                SortKey::Name => Ordering::Equal,
                SortKey::Count => b.count.cmp(&a.count),
                SortKey::Rate => b.figures.rate_hz.total_cmp(&a.figures.rate_hz),
                SortKey::Bandwidth => b.figures.bandwidth_bps.total_cmp(&a.figures.bandwidth_bps),
            };
            key.then_with(|| a.channel.cmp(&b.channel))
        };
        self.rows.sort_by(by);
        if self.reversed {
            self.rows.reverse();
        }
    }

    fn keep_selection(&mut self) {
        let present = self.selected.as_ref().is_some_and(|s| self.rows.iter().any(|r| &r.channel == s));
        if !present {
            self.selected = self.rows.first().map(|r| r.channel.clone());
        }
    }

    fn selected_index(&self) -> Option<usize> {
        let s = self.selected.as_ref()?;
        self.rows.iter().position(|r| &r.channel == s)
    }

    fn select_at(&mut self, i: usize) {
        if let Some(r) = self.rows.get(i.min(self.rows.len().saturating_sub(1))) {
            self.selected = Some(r.channel.clone());
        }
    }

    fn move_selection(&mut self, delta: isize) {
        let i = self.selected_index().unwrap_or(0);
        self.select_at(i.saturating_add_signed(delta));
    }

    fn set_sort(&mut self, key: SortKey) {
        if self.sort == key {
            self.reversed = !self.reversed;
        } else {
            self.sort = key;
            self.reversed = false;
        }
        self.sort_rows();
    }

    /// Handles one key press.
    pub fn key(&mut self, key: KeyEvent) -> Flow {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Flow::Quit;
        }
        match self.mode {
            Mode::Table => match key.code {
                // Only q quits the table: Esc means "back" in the detail view, and one press too many there must
                // not end the spy.
                KeyCode::Char('q') => return Flow::Quit,
                KeyCode::Up | KeyCode::Char('k') => self.move_selection(-1),
                KeyCode::Down | KeyCode::Char('j') => self.move_selection(1),
                KeyCode::PageUp => self.move_selection(-10),
                KeyCode::PageDown => self.move_selection(10),
                KeyCode::Home | KeyCode::Char('g') => self.select_at(0),
                KeyCode::End | KeyCode::Char('G') => self.select_at(usize::MAX),
                KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') if self.selected.is_some() => {
                    self.mode = Mode::Detail;
                }
                KeyCode::Char('n') => self.set_sort(SortKey::Name),
                KeyCode::Char('c') => self.set_sort(SortKey::Count),
                KeyCode::Char('r') => self.set_sort(SortKey::Rate),
                KeyCode::Char('b') => self.set_sort(SortKey::Bandwidth),
                _ => {}
            },
            Mode::Detail => match key.code {
                KeyCode::Char('q') | KeyCode::Esc | KeyCode::Backspace | KeyCode::Left | KeyCode::Char('h') => {
                    self.mode = Mode::Table;
                }
                KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
                KeyCode::Down | KeyCode::Char('j') => self.scroll += 1,
                KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(self.page),
                KeyCode::PageDown | KeyCode::Char(' ') => self.scroll += self.page,
                KeyCode::Home | KeyCode::Char('g') => self.scroll = 0,
                KeyCode::End | KeyCode::Char('G') => self.scroll = usize::MAX,
                KeyCode::Char('f') if !self.detail.fields.is_empty() => self.mode = Mode::Fields,
                _ => self.plot_key(key.code),
            },
            Mode::Fields => match key.code {
                KeyCode::Char('q') | KeyCode::Esc | KeyCode::Char('f') | KeyCode::Left | KeyCode::Char('h') => {
                    self.mode = Mode::Detail;
                }
                KeyCode::Up | KeyCode::Char('k') => self.field_cursor = self.field_cursor.saturating_sub(1),
                KeyCode::Down | KeyCode::Char('j') => {
                    self.field_cursor = (self.field_cursor + 1).min(self.detail.fields.len().saturating_sub(1));
                }
                KeyCode::Char(' ') | KeyCode::Enter => {
                    if let Some((path, _)) = self.detail.fields.get(self.field_cursor) {
                        self.plots.toggle(&self.detail.channel, path);
                    }
                }
                other => self.plot_key(other),
            },
        }
        Flow::Continue
    }

    /// The chart's keys, on the detail and fields screens: zoom out and in, clear.
    fn plot_key(&mut self, code: KeyCode) {
        match code {
            KeyCode::Char('+') => self.plots.zoom(2.0),
            KeyCode::Char('-') => self.plots.zoom(0.5),
            KeyCode::Char('x') => self.plots.clear(),
            _ => {}
        }
    }

    /// Renders the whole screen.
    pub fn draw(&mut self, frame: &mut Frame<'_>) {
        let [top, main, help] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(0), Constraint::Length(1)]).areas(frame.area());
        let d = self.drops;
        let head = format!("nerve spy  {}  {} channels  {} msgs  ", self.title, self.rows.len(), self.total);
        // Losses are worth the room (and the colour) only when there are some.
        let drops = if d == Drops::default() {
            Span::raw("no drops")
        } else {
            Span::styled(
                format!(
                    "DROPPED: {} queue, {} lost, {} malformed, {} kernel",
                    d.queue_overflow, d.transport_lost, d.malformed, d.kernel_dropped
                ),
                Style::new().fg(Color::Red),
            )
        };
        frame.render_widget(
            Paragraph::new(Line::from(vec![Span::raw(head), drops])).style(Style::new().add_modifier(Modifier::BOLD)),
            top,
        );
        let keys = match self.mode {
            Mode::Table => {
                "↑↓/jk select  Enter open  sort: n name  c count  r rate  b bandwidth (again: reverse)  q quit"
            }
            Mode::Detail => "↑↓/jk scroll  PgUp/PgDn page  f plot fields  Esc/q back to the table  Ctrl-C quit",
            Mode::Fields => "↑↓/jk move  Space plot/unplot  +/- window  x clear  Esc/q/f back to the message",
        };
        frame.render_widget(Paragraph::new(keys).style(Style::new().add_modifier(Modifier::REVERSED)), help);
        // With fields plotted, the chart takes the lower half of the detail and fields screens.
        let (main, chart) = if self.mode != Mode::Table && !self.plots.is_empty() {
            let [upper, lower] = Layout::vertical([Constraint::Min(4), Constraint::Percentage(50)]).areas(main);
            (upper, Some(lower))
        } else {
            (main, None)
        };
        match self.mode {
            Mode::Table => self.draw_table(frame, main),
            Mode::Detail => self.draw_detail(frame, main),
            Mode::Fields => {
                let d = &self.detail;
                plot::draw_fields(frame, main, &d.channel, &d.fields, self.field_cursor, &self.plots);
            }
        }
        if let Some(area) = chart {
            self.plots.draw(frame, area, self.now);
        }
    }

    fn draw_table(&self, frame: &mut Frame<'_>, area: Rect) {
        let arrow = |key: SortKey| match (self.sort == key, self.reversed) {
            (false, _) => "",
            (true, false) if key == SortKey::Name => " ▲",
            (true, false) => " ▼",
            (true, true) if key == SortKey::Name => " ▼",
            (true, true) => " ▲",
        };
        let header = TableRow::new([
            Cell::from(format!("Channel{}", arrow(SortKey::Name))),
            Cell::from("Type"),
            Cell::from(Line::from(format!("Count{}", arrow(SortKey::Count))).right_aligned()),
            Cell::from(Line::from(format!("Rate Hz{}", arrow(SortKey::Rate))).right_aligned()),
            Cell::from(Line::from("Jitter").right_aligned()),
            Cell::from(Line::from(format!("Bandwidth{}", arrow(SortKey::Bandwidth))).right_aligned()),
            Cell::from(Line::from("Errors").right_aligned()),
        ])
        .style(Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
        // The two text columns share what the figures leave, and a name cut to fit ends with "…" (a table cell
        // would cut it silently, and a cut name can pass for another channel).
        let text_width = area.width.saturating_sub(HIGHLIGHT_WIDTH + FIGURE_WIDTHS.iter().sum::<u16>() + COLUMN_GAPS);
        let (channel_width, type_width) = (text_width.div_ceil(2), text_width / 2);
        let rows = self.rows.iter().map(|r| {
            TableRow::new([
                Cell::from(ellipsize(&r.channel, channel_width)),
                Cell::from(ellipsize(&r.type_label(), type_width)),
                Cell::from(Line::from(r.count.to_string()).right_aligned()),
                Cell::from(Line::from(format!("{:.1}", r.figures.rate_hz)).right_aligned()),
                Cell::from(Line::from(jitter_text(&r.figures)).right_aligned()),
                Cell::from(Line::from(bandwidth_text(r.figures.bandwidth_bps)).right_aligned()),
                Cell::from(Line::from(r.decode_errors.to_string()).right_aligned()),
            ])
        });
        let [count_w, rate_w, jitter_w, bandwidth_w, errors_w] = FIGURE_WIDTHS;
        let widths = [
            Constraint::Length(channel_width),
            Constraint::Length(type_width),
            Constraint::Length(count_w),
            Constraint::Length(rate_w),
            Constraint::Length(jitter_w),
            Constraint::Length(bandwidth_w),
            Constraint::Length(errors_w),
        ];
        let table = TableWidget::new(rows, widths)
            .header(header)
            .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
            .highlight_symbol("> ");
        let mut state = TableState::default().with_selected(self.selected_index());
        if self.rows.is_empty() {
            let waiting = Paragraph::new("no messages yet (waiting for traffic on the bus)");
            frame.render_stateful_widget(table, area, &mut state);
            if area.height > 2 {
                frame.render_widget(waiting, Rect { y: area.y + 2, height: 1, ..area });
            }
            return;
        }
        frame.render_stateful_widget(table, area, &mut state);
    }

    fn draw_detail(&mut self, frame: &mut Frame<'_>, area: Rect) {
        let d = &self.detail;
        let row = self.rows.iter().find(|r| r.channel == d.channel);
        let figures = row.map(|r| r.figures).unwrap_or_default();
        let age = (self.now - d.recv_utime).max(0) as f64 / 1e6;
        let mut lines = vec![
            Line::from(d.status.clone()).style(Style::new().add_modifier(Modifier::BOLD)),
            Line::from(format!(
                "message #{}  {} bytes  {age:.1} s ago  |  {} msgs  {:.1} Hz  jitter {}  {}  {} decode errors",
                d.seq,
                d.size,
                row.map_or(0, |r| r.count),
                figures.rate_hz,
                jitter_text(&figures),
                bandwidth_text(figures.bandwidth_bps),
                row.map_or(0, |r| r.decode_errors),
            )),
            Line::from(""),
        ];
        let block = Block::bordered().title(format!(" {} ", d.channel));
        let inner = block.inner(area);
        self.page = (inner.height as usize).saturating_sub(lines.len()).max(1);
        let max_scroll = d.lines.len().saturating_sub(self.page);
        self.scroll = self.scroll.min(max_scroll);
        lines.extend(d.lines.iter().skip(self.scroll).take(self.page).map(|l| Line::from(l.as_str())));
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }
}

/// The jitter column: `-` until there is a rate, then µs, ms or s.
pub fn jitter_text(f: &WindowFigures) -> String {
    let us = f.jitter_us;
    if f.rate_hz == 0.0 {
        "-".into()
    } else if us < 1e3 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// Bytes per second in binary units.
/// Widths of the table's figure columns: count, rate, jitter, bandwidth, errors.
const FIGURE_WIDTHS: [u16; 5] = [10, 10, 9, 13, 6];
/// Columns the table's highlight symbol ("> ") takes.
const HIGHLIGHT_WIDTH: u16 = 2;
/// The spaces between the table's seven columns (one each).
const COLUMN_GAPS: u16 = 6;

/// `text` cut to `width` columns, ending in "…" when cut.
pub(crate) fn ellipsize(text: &str, width: u16) -> String {
    let width = usize::from(width);
    if text.chars().count() <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut cut: String = text.chars().take(width - 1).collect();
    cut.push('…');
    cut
}

pub fn bandwidth_text(bps: f64) -> String {
    const K: f64 = 1024.0;
    if bps < K {
        format!("{bps:.0} B/s")
    } else if bps < K * K {
        format!("{:.1} KiB/s", bps / K)
    } else if bps < K * K * K {
        format!("{:.1} MiB/s", bps / (K * K))
    } else {
        format!("{:.1} GiB/s", bps / (K * K * K))
    }
}

fn hex_head(data: &[u8], n: usize) -> String {
    let hex: Vec<String> = data.iter().take(n).map(|b| format!("{b:02x}")).collect();
    format!("{}{}", hex.join(" "), if data.len() > n { " …" } else { "" })
}

/// Runs the UI on the real terminal until the user quits.
pub fn run(table: &Mutex<Table>, types: &Types, title: String) -> anyhow::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let result = (|| -> anyhow::Result<()> {
        let mut app = App::new(title);
        loop {
            app.update(table, types, now_utime());
            terminal.draw(|f| app.draw(f))?;
            let deadline = Instant::now() + REFRESH;
            // Keys are handled as they come; the screen is refreshed at least every REFRESH.
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                if !event::poll(left)? {
                    break;
                }
                if let Event::Key(k) = event::read()? {
                    if k.kind != KeyEventKind::Release {
                        if app.key(k) == Flow::Quit {
                            return Ok(());
                        }
                        break;
                    }
                }
            }
        }
    })();
    ratatui::restore();
    result
}
