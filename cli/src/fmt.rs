//! Number formatting and aligned text tables.

pub use kprof_core::output::readable::{bytes, duration};

/// `ns` as a duration (see [`duration`]: `812 ns`, `12.35 us`, `4.20 ms`, `1.234 s`).
pub fn dur(ns: u64) -> String {
    duration(ns as f64)
}

/// A signed duration: `+1.20 ms`, `-300 ns`.
pub fn signed_dur(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "+" };
    format!("{sign}{}", duration(ns.unsigned_abs() as f64))
}

/// `part` of `whole` as a percentage with one decimal (`12.3%`).
pub fn pct(part: f64, whole: f64) -> String {
    if whole <= 0.0 {
        return "-".into();
    }
    format!("{:.1}%", 100.0 * part / whole)
}

/// Width of a full bar (100%).
pub const BAR_WIDTH: usize = 20;

/// A bar of `#` proportional to `part / whole` (full at 100%), padded with spaces.
pub fn bar(part: f64, whole: f64) -> String {
    let frac = if whole > 0.0 {
        (part / whole).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let n = (frac * BAR_WIDTH as f64).round() as usize;
    format!("{}{}", "#".repeat(n), " ".repeat(BAR_WIDTH - n))
}

/// Column alignment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Numbers.
    Right,
    /// Text.
    Left,
}

/// A text table: a header row and rows, columns padded to their widest cell;
/// the last column is not padded (names may be long).
pub struct Table {
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headers.
    pub fn new(headers: &[(&str, Align)]) -> Table {
        Table {
            align: headers.iter().map(|h| h.1).collect(),
            rows: vec![headers.iter().map(|h| h.0.to_string()).collect()],
        }
    }

    /// Adds a row (as many cells as headers).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Rows besides the header.
    pub fn len(&self) -> usize {
        self.rows.len() - 1
    }

    /// The table, each line indented by two spaces.
    pub fn render(&self) -> String {
        let cols = self.align.len();
        let mut width = vec![0usize; cols];
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in &self.rows {
            let mut line = String::from(" ");
            for (i, c) in r.iter().enumerate() {
                line.push(' ');
                let pad = width[i] - c.chars().count();
                if i + 1 == cols {
                    if self.align[i] == Align::Right {
                        line.push_str(&" ".repeat(pad));
                    }
                    line.push_str(c);
                } else if self.align[i] == Align::Right {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                } else {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A CSV field, quoted when needed.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `1 rank`, `3 ranks`.
pub fn ranks_text(n: usize) -> String {
    format!("{n} rank{}", if n == 1 { "" } else { "s" })
}
