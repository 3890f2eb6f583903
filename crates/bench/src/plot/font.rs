//! The font the charts' text is measured (SVG) and drawn (PNG) with: a
//! TrueType/OpenType file read at run time and registered with plotters'
//! ab_glyph text backend under "sans-serif" (no fontconfig, no freetype).
//!
//! `WIRESPEED_PLOT_FONT` names one; otherwise the first of [`CANDIDATES`]
//! that exists is used (Debian: `apt-get install fonts-dejavu-core`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::style::{register_font, FontStyle};

/// The environment variable that names a font file to use.
pub const FONT_ENV: &str = "WIRESPEED_PLOT_FONT";

/// Where common distributions keep a sans-serif font, first choice first.
pub const CANDIDATES: [&str; 8] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
];

/// The family name the charts ask for.
pub const FAMILY: &str = "sans-serif";

static REGISTERED: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Registers the font once per process; the error says how to get one.
pub fn ensure_registered() -> Result<&'static Path, String> {
    REGISTERED.get_or_init(register).as_ref().map(PathBuf::as_path).map_err(Clone::clone)
}

fn register() -> Result<PathBuf, String> {
    let path = find()?;
    let bytes = std::fs::read(&path).map_err(|e| format!("font {}: {e}", path.display()))?;
    // plotters keeps fonts for the life of the process: one file, leaked once.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    register_font(FAMILY, FontStyle::Normal, bytes)
        .map_err(|_| format!("font {}: not a TrueType or OpenType font", path.display()))?;
    Ok(path)
}

fn find() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(FONT_ENV) {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(format!("{FONT_ENV}={}: no such file", p.display())) };
    }
    CANDIDATES.iter().map(PathBuf::from).find(|p| p.is_file()).ok_or_else(|| {
        format!(
            "no font for the chart's text: install one (Debian: apt-get install fonts-dejavu-core) \
             or name a .ttf file in {FONT_ENV}"
        )
    })
}
