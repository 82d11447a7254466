//! The scale suite's plots: one SVG file per curve family, drawn with plotters' SVG backend.

use std::path::Path;

use plotters::prelude::*;

/// One line of a plot: its legend and its points (x, y), in x order.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A plot's axes.
pub struct Axes<'a> {
    pub title: &'a str,
    pub x: &'a str,
    pub y: &'a str,
    pub log_x: bool,
    pub log_y: bool,
}

const COLOURS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05).max(1e-9);
        ((lo - pad).min(0.0), hi + pad)
    }
}

/// Writes `series` as an SVG line plot to `path`; points that cannot be drawn (not finite, or not positive on a
/// log axis) are left out.
pub fn lines(path: &Path, axes: &Axes, series: &[Series]) -> Result<(), String> {
    let keep = |x: f64, y: f64| x.is_finite() && y.is_finite() && (!axes.log_x || x > 0.0) && (!axes.log_y || y > 0.0);
    let xs = range(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)), axes.log_x);
    let ys = range(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), axes.log_y);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    let e = |e: &dyn std::fmt::Display| format!("plotting {}: {e}", path.display());
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut builder = ChartBuilder::on(&root);
    builder.caption(axes.title, ("sans-serif", 20)).margin(16).x_label_area_size(48).y_label_area_size(72);
    // The four axis kinds are four chart types in plotters; one macro body draws on each.
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart.map_err(|x| e(&x))?;
            chart
                .configure_mesh()
                .x_desc(axes.x)
                .y_desc(axes.y)
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(|x| e(&x))?;
            for (i, s) in series.iter().enumerate() {
                let c = COLOURS[i % COLOURS.len()];
                let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(|&(x, y)| keep(x, y)).collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(|x| e(&x))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
                chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled()))).map_err(|x| e(&x))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(|x| e(&x))?;
        }};
    }
    match (axes.log_x, axes.log_y) {
        (true, true) => draw!(builder.build_cartesian_2d((xs.0..xs.1).log_scale(), (ys.0..ys.1).log_scale())),
        (true, false) => draw!(builder.build_cartesian_2d((xs.0..xs.1).log_scale(), ys.0..ys.1)),
        (false, true) => draw!(builder.build_cartesian_2d(xs.0..xs.1, (ys.0..ys.1).log_scale())),
        (false, false) => draw!(builder.build_cartesian_2d(xs.0..xs.1, ys.0..ys.1)),
    }
    root.present().map_err(|x| e(&x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plot_is_an_svg_with_its_title_and_legend() {
        let dir = std::env::temp_dir().join(format!("nerve-bench-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.svg");
        let s = [
            Series { name: "nerve".into(), points: vec![(1.0, 2.0), (10.0, 3.0), (100.0, 0.0)] },
            Series { name: "peer".into(), points: vec![(1.0, 5.0), (1000.0, 50.0)] },
        ];
        let axes = Axes { title: "idle CPU", x: "channels", y: "ms/s", log_x: true, log_y: true };
        lines(&path, &axes, &s).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("idle CPU") && svg.contains("nerve") && svg.contains("peer"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
