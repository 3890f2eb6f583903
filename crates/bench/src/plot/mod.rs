//! Latency you can look at: histograms of per-message latency written as
//! SVG or PNG (`--plot FILE.svg|png`), several series on one chart, their
//! percentiles marked and the wire limit drawn.

use std::fmt;
use std::path::Path;

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

/// Writes `plot` to `path`, as SVG or PNG by its extension.
pub fn write_latency_plot(path: &Path, plot: &LatencyPlot) -> Result<(), PlotError> {
    let _ = plot;
    Err(PlotError::Draw(format!("{}: not written yet", path.display())))
}
