//! The messages block of the summary and of `kprof report`: this process's rows
//! of each channel's message matrix (per peer, count and bytes), the largest peers
//! first.

use std::fmt::Write as _;

use crate::output::readable::{bytes, table_name};
use crate::output::report::Report;

/// Peers listed per channel, besides the totals.
const PEERS_SHOWN: usize = 8;

/// Appends the messages block to `s` (nothing when no message was recorded).
pub fn block(s: &mut String, r: &Report, top: usize) {
    if r.messages.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nMessages (this process's row of each matrix; `kprof merge` of every process's directory gives the whole):"
    );
    for m in r.messages.iter().take(top) {
        let mut peers = m.peers.clone();
        peers.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.count.cmp(&a.count)));
        let shown: Vec<String> = peers
            .iter()
            .take(PEERS_SHOWN)
            .map(|p| format!("{}: {} ({})", p.peer, p.count, bytes(p.bytes)))
            .collect();
        let more = peers.len().saturating_sub(PEERS_SHOWN);
        let _ = writeln!(
            s,
            "  {:<24} {:<7} {:>10} msgs {:>11}  {} peer{}: {}{}",
            table_name(&m.channel, Some(24)),
            m.direction,
            m.count,
            bytes(m.bytes),
            m.peers.len(),
            if m.peers.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if more > 0 {
                format!(", ... {more} more")
            } else {
                String::new()
            }
        );
    }
}
