//! Draws a [`LatencyPlot`] on any plotters backend: one histogram per series
//! (translucent bars with a solid outline) on shared axes (x logarithmic
//! when the latencies span a wide range, see [`super::bins`]), each series'
//! p50/p99/p99.9 as vertical lines labelled at the top, the wire limit as a
//! dashed black line, and a legend strip under the chart with every
//! series' percentiles, sample count and the tail past the axis.

use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::bins::{axis_end, Histogram, XRange, BINS};
use super::font::FAMILY;
use super::percentiles::Percentiles;
use super::LatencyPlot;

/// The image's width and the chart's height (the legend strip adds to it), px.
pub const WIDTH: u32 = 1000;
const CHART_HEIGHT: u32 = 540;
/// One legend line, px.
const LEGEND_LINE: u32 = 24;
/// One row of percentile labels at the top of the plotting area, px.
const LABEL_ROW: i32 = 17;
/// Space around the chart, and the axes' label areas, px.
const MARGIN: u32 = 14;
const MARGIN_RIGHT: u32 = 28;
const X_LABEL_AREA: u32 = 52;
const Y_LABEL_AREA: u32 = 78;
const CAPTION_SPACE: u32 = 40;
/// Text sizes (plotters' units: an SVG font-size of size / 1.24).
const CAPTION_SIZE: u32 = 26;
const AXIS_DESC_SIZE: u32 = 20;
const TICK_SIZE: u32 = 17;
const MARK_SIZE: u32 = 16;
const LEGEND_SIZE: u32 = 18;
/// What one character of a percentile label is taken to span when laying
/// them out, px (a generous estimate for digits at [`MARK_SIZE`]).
const MARK_CHAR_PX: f64 = 8.0;

/// The y axis' label: every bar counts the samples in its bin.
pub const Y_LABEL: &str = "samples per bin";

/// Series colours, in order (then repeated).
const PALETTE: [RGBColor; 5] = [
    RGBColor(214, 39, 40),   // red
    RGBColor(31, 119, 180),  // blue
    RGBColor(44, 160, 44),   // green
    RGBColor(148, 103, 189), // purple
    RGBColor(255, 127, 14),  // orange
];

/// The series colour of index `i`.
fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The image's height for `series` series (the chart and its legend).
pub fn height(series: usize) -> u32 {
    CHART_HEIGHT + legend_height(series)
}

fn legend_height(series: usize) -> u32 {
    LEGEND_LINE * (series as u32 + 1) + MARGIN
}

/// A series ready to draw.
struct Prepared<'a> {
    label: &'a str,
    count: usize,
    percentiles: Percentiles,
    histogram: Histogram,
    colour: RGBColor,
}

/// One percentile's label and its line: which row of labels it sits in.
struct Mark {
    series: usize,
    name: &'static str,
    value: f64,
    row: i32,
    /// The label goes left of its line (there is no room on the right).
    leftward: bool,
}

/// Draws `plot` (validated: every series has finite samples) on `root`.
pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, plot: &LatencyPlot) -> Result<(), String> {
    let (range, series) = prepare(plot)?;
    root.fill(&WHITE).map_err(err)?;
    let (chart_area, legend_area) = root.split_vertically(CHART_HEIGHT);

    let marks = lay_out_marks(&series, range);
    let rows = marks.iter().map(|m| m.row + 1).max().unwrap_or(0);
    let peak = series.iter().map(|s| s.histogram.peak()).max().unwrap_or(1).max(1) as f64;
    // Headroom above the tallest bar for the rows of percentile labels.
    let plot_h = f64::from(CHART_HEIGHT - 2 * MARGIN - X_LABEL_AREA - CAPTION_SPACE);
    let labels_h = f64::from(rows * LABEL_ROW + 12);
    let y_max = peak * plot_h / (plot_h - labels_h).max(plot_h * 0.4);

    let mut builder = ChartBuilder::on(&chart_area);
    builder
        .caption(&plot.title, (FAMILY, CAPTION_SIZE))
        .margin(MARGIN)
        .margin_right(MARGIN_RIGHT)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(Y_LABEL_AREA);
    let parts = Parts { root, plot, range, series: &series, marks: &marks };
    if range.log {
        parts.draw(builder.build_cartesian_2d((range.lo..range.hi).log_scale(), 0f64..y_max).map_err(err)?)?;
    } else {
        parts.draw(builder.build_cartesian_2d(range.lo..range.hi, 0f64..y_max).map_err(err)?)?;
    }
    draw_legend(&legend_area, &series, plot.wire_limit_us, range)
}

/// What goes on the chart once its axes are built (linear or logarithmic).
struct Parts<'a, DB: DrawingBackend> {
    root: &'a DrawingArea<DB, Shift>,
    plot: &'a LatencyPlot,
    range: XRange,
    series: &'a [Prepared<'a>],
    marks: &'a [Mark],
}

impl<DB: DrawingBackend> Parts<'_, DB> {
    /// The mesh, the histograms, the percentile lines and the wire limit.
    fn draw<X>(&self, mut chart: ChartContext<'_, DB, Cartesian2d<X, RangedCoordf64>>) -> Result<(), String>
    where
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let (root, range, series) = (self.root, self.range, self.series);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.12))
            .x_desc(self.plot.x_label.as_str())
            .y_desc(Y_LABEL)
            .x_labels(if range.log { 40 } else { 12 })
            .y_labels(8)
            .x_label_formatter(&|x| if range.log { log_tick(*x) } else { tick(*x) })
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style((FAMILY, TICK_SIZE))
            .axis_desc_style((FAMILY, AXIS_DESC_SIZE))
            .draw()
            .map_err(err)?;

        for s in series {
            let bars = s.histogram.counts.iter().enumerate().filter(|(_, &n)| n > 0).map(|(i, &n)| {
                Rectangle::new([(range.edge(i), 0.0), (range.edge(i + 1), n as f64)], s.colour.mix(0.28).filled())
            });
            chart.draw_series(bars).map_err(err)?;
        }
        for s in series {
            chart.draw_series(std::iter::once(outline(&s.histogram, range, s.colour))).map_err(err)?;
        }

        // Everything from here on is placed in pixels, over the plotting area.
        let (px_x, px_y) = chart.plotting_area().get_pixel_range();
        let to_px = |x: f64| chart.backend_coord(&(x, 0.0)).0;
        let mark_style = TextStyle::from((FAMILY, MARK_SIZE));
        for m in self.marks {
            let c = series[m.series].colour;
            let x = to_px(m.value);
            let top = px_y.start + 2 + m.row * LABEL_ROW;
            let stroke = if m.name == "p50" { 2 } else { 1 };
            root.draw(&PathElement::new(vec![(x, top), (x, px_y.end)], c.stroke_width(stroke))).map_err(err)?;
            let (lx, h) = if m.leftward { (x - 3, HPos::Right) } else { (x + 3, HPos::Left) };
            let style = mark_style.color(&c).pos(Pos::new(h, VPos::Top));
            root.draw(&Text::new(format!("{} {}", m.name, short(m.value)), (lx, top), style)).map_err(err)?;
        }
        if let Some(w) = self.plot.wire_limit_us {
            let x = to_px(w);
            dashed_vertical(root, x, px_y.start, px_y.end, &BLACK)?;
            let label = format!("wire limit {} µs", short(w));
            let style = TextStyle::from((FAMILY, MARK_SIZE))
                .color(&BLACK)
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Left, VPos::Bottom));
            // Along the line, reading upwards, on its left if there is room.
            let lx = if x - 20 > px_x.start { x - 4 } else { x + 18 };
            root.draw(&Text::new(label, (lx, px_y.end - 8), style)).map_err(err)?;
        }
        Ok(())
    }
}

/// Checks and bins every series over the shared range.
fn prepare(plot: &LatencyPlot) -> Result<(XRange, Vec<Prepared<'_>>), String> {
    let mut min = f64::INFINITY;
    let (mut max_p50, mut max_p999) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let mut percentiles = Vec::with_capacity(plot.series.len());
    for s in &plot.series {
        let p = Percentiles::of(&s.samples_us).ok_or_else(|| format!("series {:?} has no samples", s.label))?;
        min = s.samples_us.iter().copied().fold(min, f64::min);
        max_p50 = max_p50.max(p.p50);
        max_p999 = max_p999.max(p.p999);
        percentiles.push(p);
    }
    let range = XRange::fit(min, axis_end(max_p50, max_p999), plot.wire_limit_us);
    let series = plot
        .series
        .iter()
        .zip(percentiles)
        .enumerate()
        .map(|(i, (s, p))| Prepared {
            label: &s.label,
            count: s.samples_us.len(),
            percentiles: p,
            histogram: Histogram::of(&s.samples_us, range),
            colour: colour(i),
        })
        .collect();
    Ok((range, series))
}

/// Rows for the percentile labels: each series starts a new row, and a
/// label that would run into the one before it in its row moves down a row.
fn lay_out_marks(series: &[Prepared<'_>], range: XRange) -> Vec<Mark> {
    let plot_w = f64::from(WIDTH - MARGIN - MARGIN_RIGHT - Y_LABEL_AREA);
    let px = |x: f64| range.fraction(x) * plot_w;
    let mut marks = Vec::new();
    let mut first_row = 0;
    for (i, s) in series.iter().enumerate() {
        // The right end of the last label in each of this series' rows.
        let mut ends: Vec<f64> = Vec::new();
        for (name, value) in s.percentiles.named() {
            if value > range.hi {
                continue;
            }
            let x = px(value);
            let text_w = (name.len() + 1 + short(value).len()) as f64 * MARK_CHAR_PX + 6.0;
            let leftward = x + text_w > plot_w;
            let start = if leftward { x - text_w } else { x };
            let row = match ends.iter().position(|&end| start > end) {
                Some(r) => r,
                None => {
                    ends.push(f64::NEG_INFINITY);
                    ends.len() - 1
                }
            };
            ends[row] = start + text_w;
            marks.push(Mark { series: i, name, value, row: first_row + row as i32, leftward });
        }
        first_row += ends.len().max(1) as i32;
    }
    marks
}

/// The histogram's outline: a step line over the bins.
fn outline(h: &Histogram, range: XRange, c: RGBColor) -> PathElement<(f64, f64)> {
    let mut points = Vec::with_capacity(2 * BINS + 2);
    points.push((range.lo, 0.0));
    for (i, &n) in h.counts.iter().enumerate() {
        points.push((range.edge(i), n as f64));
        points.push((range.edge(i + 1), n as f64));
    }
    points.push((range.hi, 0.0));
    PathElement::new(points, c.stroke_width(2))
}

/// A dashed vertical line from `top` to `bottom` at `x`, px.
fn dashed_vertical<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    x: i32,
    top: i32,
    bottom: i32,
    c: &RGBColor,
) -> Result<(), String> {
    let (dash, gap) = (8, 5);
    let mut y = top;
    while y < bottom {
        let end = (y + dash).min(bottom);
        root.draw(&PathElement::new(vec![(x, y), (x, end)], c.stroke_width(2))).map_err(err)?;
        y = end + gap;
    }
    Ok(())
}

/// One line per series (its colour, label, percentiles, count and tail),
/// then the wire limit's.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Prepared<'_>],
    wire: Option<f64>,
    range: XRange,
) -> Result<(), String> {
    let left = (MARGIN + Y_LABEL_AREA) as i32;
    let style = TextStyle::from((FAMILY, LEGEND_SIZE)).color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    let line_y = |i: usize| (LEGEND_LINE / 2 + LEGEND_LINE * i as u32) as i32;
    for (i, s) in series.iter().enumerate() {
        let y = line_y(i);
        area.draw(&Rectangle::new([(left, y - 7), (left + 26, y + 7)], s.colour.mix(0.28).filled())).map_err(err)?;
        area.draw(&Rectangle::new([(left, y - 7), (left + 26, y + 7)], s.colour.stroke_width(2))).map_err(err)?;
        area.draw(&Text::new(legend_line(s, range), (left + 36, y), style.clone())).map_err(err)?;
    }
    if let Some(w) = wire {
        let y = line_y(series.len());
        for x in [left, left + 10, left + 20] {
            area.draw(&PathElement::new(vec![(x, y), (x + 6, y)], BLACK.stroke_width(2))).map_err(err)?;
        }
        let text = format!("wire limit: {} µs, the physical floor (no message can take less)", short(w));
        area.draw(&Text::new(text, (left + 36, y), style)).map_err(err)?;
    }
    Ok(())
}

/// `label: p50 … · p99 … · p99.9 … µs (n = …, k past the axis' end)`.
fn legend_line(s: &Prepared<'_>, range: XRange) -> String {
    let p = &s.percentiles;
    let tail = match s.histogram.beyond {
        0 => String::new(),
        k => format!(", {k} past {} µs", short(range.hi)),
    };
    format!(
        "{}: p50 {} · p99 {} · p99.9 {} µs (n = {}{tail})",
        s.label,
        short(p.p50),
        short(p.p99),
        short(p.p999),
        s.count
    )
}

/// A value with as many decimals as its size calls for (3 significant
/// figures at least below 100).
pub fn short(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// An axis tick: no trailing zeros.
fn tick(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A tick of a logarithmic axis: only 1, 2 and 5 × 10ⁿ are labelled (the
/// others would crowd each other at the top of each decade).
fn log_tick(x: f64) -> String {
    if x <= 0.0 {
        return String::new();
    }
    // The axis' key points are computed in floating point (4.9999…, 99.999…):
    // the decade is taken with a little slack, the mantissa compared loosely.
    let mantissa = x / 10f64.powf((x.log10() + 1e-6).floor());
    if [1.0, 2.0, 5.0].iter().any(|m| (mantissa - m).abs() < 1e-3) {
        tick(x)
    } else {
        String::new()
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_short() {
        assert_eq!(short(3.6), "3.60");
        assert_eq!(short(12.345), "12.3");
        assert_eq!(short(151.7), "152");
        assert_eq!(short(0.0616), "0.062");
        assert_eq!(tick(20.0), "20");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(log_tick(20.0), "20");
        assert_eq!(log_tick(0.5), "0.5");
        assert_eq!(log_tick(30.0), "");
        assert_eq!(log_tick(4.999_999_9), "5");
        assert_eq!(log_tick(99.999_999_9), "100");
    }
}
