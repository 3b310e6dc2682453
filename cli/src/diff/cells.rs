//! How the diff writes its numbers: counts, ranges, changes in percent,
//! p-values. A leaf that every table of the diff reads.

/// A count: whole, or with one decimal (a mean over ranks or runs).
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// `lo..hi unit`, both in the unit of `hi`.
pub fn range(lo: f64, hi: f64) -> String {
    let (scale, unit, digits) = if hi < 1e3 {
        (1.0, "ns", 0)
    } else if hi < 1e6 {
        (1e3, "us", 2)
    } else if hi < 1e9 {
        (1e6, "ms", 2)
    } else {
        (1e9, "s", 3)
    };
    format!(
        "{:.digits$}..{:.digits$} {unit}",
        lo / scale,
        hi / scale,
        digits = digits
    )
}

/// A p-value: three decimals, or one significant digit below 0.001.
pub fn p_text(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.0e}")
    }
}

/// A change in percent with its sign (`+12.5%`), or `-` when there is none.
pub fn rel_text(rel: Option<f64>) -> String {
    match rel {
        Some(r) => format!("{r:+.1}%"),
        None => "-".into(),
    }
}
