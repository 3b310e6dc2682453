//! The nearest known name to a misspelt one, for "did you mean" lines.

/// Edit distance between `a` and `b` (insertions, deletions, substitutions and
/// swaps of neighbours each count one), ASCII case ignored.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<u8> = a.bytes().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<u8> = b.bytes().map(|c| c.to_ascii_lowercase()).collect();
    // Three rows of the table: two back (for swaps), one back, this one.
    let mut older: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(older[j - 2] + 1);
            }
        }
        std::mem::swap(&mut older, &mut prev);
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
}

/// The name of `known` nearest to `given` (the first of equals).
pub fn nearest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known.into_iter().min_by_key(|k| distance(given, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("KPROF_TRAC", "KPROF_TRACE"), 1);
        assert_eq!(distance("tracee", "trace"), 1);
        assert_eq!(distance("tarce", "trace"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("SAME", "same"), 0);
    }

    #[test]
    fn nearest_picks_the_closest() {
        let known = ["KPROF_TRACE", "KPROF_TRACE_MAX_MB", "KPROF_SUMMARY"];
        assert_eq!(nearest("KPROF_TRAC", known), Some("KPROF_TRACE"));
        assert_eq!(
            nearest("KPROF_TRACE_MAX", known),
            Some("KPROF_TRACE_MAX_MB")
        );
        assert_eq!(nearest("KPROF_SUMARY", known), Some("KPROF_SUMMARY"));
        assert_eq!(nearest("x", []), None);
    }
}
