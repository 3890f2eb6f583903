//! Latency you can look at: histograms of per-message latency written as
//! SVG or PNG (`--plot FILE.svg|png`), several series on one chart, their
//! percentiles marked and the wire limit drawn.
//!
//! Drawn with plotters: SVG through its SVG backend, PNG through its bitmap
//! backend. Text is measured (and, in a PNG, drawn) with a font file read
//! at run time ([`font`]: DejaVu Sans from Debian's `fonts-dejavu-core`, or
//! `WIRESPEED_PLOT_FONT`); an SVG names the `sans-serif` family, so its
//! viewer renders the text with its own.

mod bins;
mod chart;
pub mod font;
mod percentiles;

use std::fmt;
use std::path::Path;

use plotters::prelude::{BitMapBackend, IntoDrawingArea, SVGBackend};

pub use chart::Y_LABEL;
pub use percentiles::Percentiles;

/// One set of latency samples drawn as one histogram (e.g. "classic", "fast").
#[derive(Debug, Clone)]
pub struct Series {
    /// The legend's name for it.
    pub label: String,
    /// Latencies in microseconds, in any order.
    pub samples_us: Vec<f64>,
}

/// A chart: every series on the same axes.
#[derive(Debug, Clone)]
pub struct LatencyPlot {
    /// The chart's title.
    pub title: String,
    /// The x axis' label, units included (e.g. "latency per message (µs)").
    pub x_label: String,
    /// The histograms, drawn in this order.
    pub series: Vec<Series>,
    /// The physical floor (the wire time), drawn as a vertical line when known.
    pub wire_limit_us: Option<f64>,
}

/// Why a plot was not written.
#[derive(Debug)]
pub enum PlotError {
    /// The file's extension is neither `.svg` nor `.png`.
    UnsupportedFormat(String),
    /// A series has no samples, or samples that are not finite.
    NoData(String),
    /// Drawing or writing the file failed.
    Draw(String),
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlotError::UnsupportedFormat(p) => write!(f, "cannot plot to {p}: the file name must end in .svg or .png"),
            PlotError::NoData(s) => write!(f, "nothing to plot: {s}"),
            PlotError::Draw(e) => write!(f, "plot failed: {e}"),
        }
    }
}

impl std::error::Error for PlotError {}

/// The image formats, by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

impl Format {
    /// The format `path`'s extension names (`.svg` or `.png`, any case).
    pub fn of(path: &Path) -> Result<Format, PlotError> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("svg") => Ok(Format::Svg),
            Some("png") => Ok(Format::Png),
            _ => Err(PlotError::UnsupportedFormat(path.display().to_string())),
        }
    }
}

/// Checks that `plot` has something to draw: at least one series, each
/// with samples, all finite.
pub fn check(plot: &LatencyPlot) -> Result<(), PlotError> {
    if plot.series.is_empty() {
        return Err(PlotError::NoData(format!("{:?} has no series", plot.title)));
    }
    for s in &plot.series {
        if s.samples_us.is_empty() {
            return Err(PlotError::NoData(format!("series {:?} has no samples", s.label)));
        }
        if let Some(x) = s.samples_us.iter().find(|x| !x.is_finite()) {
            return Err(PlotError::NoData(format!("series {:?} has a sample that is not a number ({x})", s.label)));
        }
    }
    if plot.wire_limit_us.is_some_and(|w| !w.is_finite()) {
        return Err(PlotError::NoData(format!("the wire limit of {:?} is not a number", plot.title)));
    }
    Ok(())
}

/// Writes `plot` to `path`, as SVG or PNG by its extension.
pub fn write_latency_plot(path: &Path, plot: &LatencyPlot) -> Result<(), PlotError> {
    let format = Format::of(path)?;
    check(plot)?;
    font::ensure_registered().map_err(PlotError::Draw)?;
    let size = (chart::WIDTH, chart::height(plot.series.len()));
    let drawn = match format {
        Format::Svg => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            chart::draw(&root, plot).and_then(|()| root.present().map_err(|e| e.to_string()))
        }
        Format::Png => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            chart::draw(&root, plot).and_then(|()| root.present().map_err(|e| e.to_string()))
        }
    };
    drawn.map_err(|e| PlotError::Draw(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plot() -> LatencyPlot {
        let spread = |base: f64, n: usize| (0..n).map(|i| base + (i % 50) as f64 * 0.1 + (i / 997) as f64).collect();
        LatencyPlot {
            title: "spi: 9-byte sync messages at 20 MHz".into(),
            x_label: "latency per message (µs)".into(),
            series: vec![
                Series { label: "classic (5.18)".into(), samples_us: spread(11.0, 3000) },
                Series { label: "fast".into(), samples_us: spread(5.0, 3000) },
            ],
            wire_limit_us: Some(3.6),
        }
    }

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("wirespeed-plot-{}-{name}", std::process::id()))
    }

    #[test]
    fn an_svg_has_the_title_the_legend_and_the_percentiles() {
        let path = temp("test.svg");
        write_latency_plot(&path, &plot()).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        for text in [
            "spi: 9-byte sync messages at 20 MHz",
            "latency per message (µs)",
            Y_LABEL,
            "classic (5.18): p50",
            "fast: p50",
            "\np50 ",
            "\np99 ",
            "\np99.9 ",
            "wire limit 3.60 µs",
            "<rect",
        ] {
            assert!(svg.contains(text), "{text:?} missing from the SVG");
        }
        // fast's median: 5 + 2.45 (the mean of 0..4.9) + 1 (i / 997 ≈ 1 at the middle).
        let p = Percentiles::of(&plot().series[1].samples_us).unwrap();
        assert!(svg.contains(&format!("p50 {}", chart::short(p.p50))), "fast's p50 label");
    }

    #[test]
    fn a_png_is_a_png() {
        let path = temp("test.png");
        write_latency_plot(&path, &plot()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
        assert!(bytes.len() > 10_000, "{} bytes", bytes.len());
    }

    #[test]
    fn another_extension_is_refused_before_anything_is_written() {
        let path = temp("test.jpg");
        let e = write_latency_plot(&path, &plot()).unwrap_err();
        assert!(matches!(e, PlotError::UnsupportedFormat(_)), "{e:?}");
        assert!(e.to_string().contains(".svg or .png"), "{e}");
        assert!(!path.exists());
        assert!(matches!(Format::of(Path::new("no_extension")), Err(PlotError::UnsupportedFormat(_))));
        assert_eq!(Format::of(Path::new("A.SVG")).unwrap(), Format::Svg);
    }

    #[test]
    fn nothing_to_plot_is_no_data() {
        let path = temp("empty.svg");
        let mut p = plot();
        p.series[1].samples_us.clear();
        assert!(matches!(write_latency_plot(&path, &p), Err(PlotError::NoData(s)) if s.contains("fast")));
        p.series.clear();
        assert!(matches!(write_latency_plot(&path, &p), Err(PlotError::NoData(_))));
        let mut nan = plot();
        nan.series[0].samples_us.push(f64::NAN);
        assert!(matches!(write_latency_plot(&path, &nan), Err(PlotError::NoData(_))));
        assert!(!path.exists());
    }
}
