//! wirespeed's experiments, each a function returning a typed result that
//! renders as one JSON object (`--json`) or a human-readable table.
//!
//! Rules every scenario follows (DESIGN.md §4): comparisons are measured in
//! one run, interleaved (A B A B …), and reported as medians and ratios; the
//! physical limit of a run, its wire time, is reported beside elapsed time.

// One `json!` object per policy in `canecho` has more keys than the default limit expands.
#![recursion_limit = "256"]

pub mod adc;
pub mod canecho;
pub mod delay;
pub mod dma;
pub mod flash;
pub mod flash_flashrom;
pub mod gpio;
pub mod host;
pub mod placement;
pub mod plot;
pub mod regmap;
pub mod shim;
pub mod soak;
pub mod spi;
pub mod stats;
pub mod table;
pub mod usage;
