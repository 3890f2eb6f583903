//! Plain-text tables for the human form of a benchmark report.

/// A table with a header row; columns are right-aligned except the first.
#[derive(Debug, Default)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(header: &[&str]) -> Table {
        Table { rows: vec![header.iter().map(|s| (*s).to_owned()).collect()] }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) -> &mut Table {
        self.rows.push(cells);
        self
    }

    /// Renders with a rule under the header.
    pub fn render(&self) -> String {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..cols)
            .map(|c| self.rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for (i, r) in self.rows.iter().enumerate() {
            let line: Vec<String> = (0..cols)
                .map(|c| {
                    let cell = r.get(c).map_or("", String::as_str);
                    if c == 0 {
                        format!("{cell:<w$}", w = widths[c])
                    } else {
                        format!("{cell:>w$}", w = widths[c])
                    }
                })
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
            if i == 0 {
                out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1)));
                out.push('\n');
            }
        }
        out
    }
}

/// A `y / x` cell with `digits` decimals, for figures shown with
/// `shown_digits`: "-" where `x` is shown as zero (a ratio against it says
/// nothing: 0/0, or a trace of something against none) or either figure is
/// missing (NaN, as the CS figures on a real device).
pub fn ratio(y: f64, x: f64, shown_digits: i32, digits: usize) -> String {
    let scale = 10f64.powi(shown_digits);
    if y.is_finite() && x.is_finite() && (x * scale).round() != 0.0 {
        format!("{:.*}", digits, y / x)
    } else {
        "-".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_over_a_figure_shown_as_zero_or_missing_is_left_out() {
        assert_eq!(ratio(0.2, 0.5, 1, 2), "0.40");
        assert_eq!(ratio(31.0, 80.6, 1, 2), "0.38");
        // 0.2 % over 0.0001 % (shown 0.0): `wirespeed demo` once printed 1734.57.
        assert_eq!(ratio(0.2, 0.0001, 1, 2), "-");
        assert_eq!(ratio(0.2, 0.0, 1, 2), "-");
        // At three decimals the same figure is shown, and so is the ratio.
        assert_eq!(ratio(0.0002, 0.001, 3, 3), "0.200");
        // `bench spi`'s pump rows: nothing against nothing; context switches against none.
        assert_eq!(ratio(0.0, 0.0, 4, 3), "-");
        assert_eq!(ratio(0.003, 0.0, 3, 3), "-");
        assert_eq!(ratio(f64::NAN, 0.1, 3, 3), "-");
        assert_eq!(ratio(0.1, f64::NAN, 3, 3), "-");
        assert_eq!(ratio(0.0, 0.05, 1, 2), "0.00");
    }

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(&["test", "mean"]);
        t.row(vec!["nop".into(), "0.1".into()]).row(vec!["sleep".into(), "100.25".into()]);
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "test     mean");
        assert_eq!(lines[2], "nop       0.1");
        assert_eq!(lines[3], "sleep  100.25");
    }
}
