//! Numbers and names as people read them in tables: durations, byte counts, and
//! names made into one cell (escaped, cut to a width). Shared by the summary,
//! its blocks, the job's summary and `kprof`'s reports.

/// Human-readable duration.
pub fn duration(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// Human-readable byte count.
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// `name` as one cell of a table row: control characters (a newline would break the
/// row) escaped as `\n`, `\t`, `\u{1b}`, ..., and at most `width` characters, the
/// cut marked with `...`.
pub fn table_name(name: &str, width: Option<usize>) -> String {
    let mut out = String::new();
    let mut chars = 0;
    let limit = width.unwrap_or(usize::MAX);
    for c in name.chars() {
        let piece: std::borrow::Cow<str> = if c.is_control() {
            c.escape_default().to_string().into()
        } else {
            let mut b = [0; 4];
            c.encode_utf8(&mut b).to_string().into()
        };
        let n = piece.chars().count();
        if chars + n > limit {
            // Make room for the marker.
            while chars + 3 > limit {
                match out.pop() {
                    Some(_) => chars -= 1,
                    None => break,
                }
            }
            out.push_str("...");
            return out;
        }
        out.push_str(&piece);
        chars += n;
    }
    out
}
