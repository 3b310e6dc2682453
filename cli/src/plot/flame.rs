//! The call-path tree as an interactive icicle (a flame graph with its roots on
//! top), written by inferno: hover a frame for its details, click it to zoom
//! into its subtree, search names (`Search`, or Ctrl-F) — the graph people know
//! from FlameGraph.
//!
//! inferno reads folded stacks (`root;child;leaf SAMPLES` per line). Each call
//! path is one line whose samples are its exclusive time per thread of its team
//! in ns, in depth-first order (kept: inferno's flame chart mode), so that a frame is as wide as the
//! time per thread below it: its inclusive time where the team does not change,
//! the mean over the team's threads at an OpenMP construct. inferno's own hover
//! text names the frame and its samples; each frame's `<title>` (what the hover
//! shows) is then rewritten with the call path's own numbers (kind, share,
//! inclusive and exclusive time, instances), and its fill with its kind's
//! colour, found by the frame's position (`fg:x`, `fg:w` and depth), which the
//! depth-first order fixes.

use std::collections::HashMap;

use super::figures::{PlotNode, PALETTE};
use crate::outcome::Failure;

/// Levels drawn; a deeper call path's time stays in its ancestor at this level.
const MAX_DEPTH: usize = 100;

/// Subtrees narrower than this share of the whole are not drawn as frames of
/// their own: their time stays in their parent's width (inferno would prune
/// them anyway; this keeps a million tiny call paths out of its input).
const MIN_SHARE: f64 = 1e-4;

/// inferno's frame height, px.
pub const FRAME_HEIGHT: usize = 18;

/// A drawn flame graph: the SVG (with its script) and the kinds, in the order of
/// their colours.
pub struct Flame {
    /// The standalone SVG document.
    pub svg: String,
    /// Its height in px (the page's frame for it is this tall).
    pub height: usize,
    /// The kinds of the frames, each with its colour (`rgb(r,g,b)`).
    pub kinds: Vec<(String, String)>,
}

/// One frame as laid out here: where inferno will put it, and its text.
struct Placed {
    depth: usize,
    title: String,
    fill: String,
}

/// What the layout walk carries.
struct Walk<'a> {
    lines: Vec<String>,
    /// Samples emitted so far (the next frame's `fg:x`).
    at: u64,
    all: u64,
    kinds: Vec<&'a str>,
    /// (fg:x, fg:w) -> frames there (a chain of single children shares them).
    placed: HashMap<(u64, u64), Vec<Placed>>,
}

/// The samples of a subtree: each node's own plus its children's, down to
/// [`MAX_DEPTH`].
fn subtree(n: &PlotNode) -> u64 {
    n.own + n.children.iter().map(subtree).sum::<u64>()
}

/// `name` as a frame of a folded line: no `;` (it separates frames), no space
/// (the last space separates the samples, and a name ending in a number would
/// read as a second sample column), no control character, not empty.
fn frame_name(name: &str) -> String {
    let name = kprof_core::output::readable::table_name(name.trim(), None);
    if name.is_empty() {
        return "(no name)".into();
    }
    name.chars()
        .map(|c| match c {
            ';' => '\u{FF1B}',
            c if c.is_whitespace() => '\u{A0}',
            c => c,
        })
        .collect()
}

/// Lays out `list` (children of the path `prefix`, at `depth`), adding lines.
fn lay<'a>(list: &'a [PlotNode], prefix: &str, depth: usize, w: &mut Walk<'a>) -> u64 {
    let mut folded = 0; // samples of subtrees too thin to draw, for the parent
    let mut used: Vec<String> = Vec::new();
    for n in list {
        let width = subtree(n);
        if width == 0 {
            continue;
        }
        if (width as f64) < MIN_SHARE * w.all as f64 {
            folded += width;
            continue;
        }
        // Siblings of one name would merge into one frame: the kind, then a
        // number, tells them apart.
        let mut name = frame_name(&n.name);
        if used.contains(&name) {
            name = format!("{name}\u{A0}[{}]", frame_name(&n.kind));
            let base = name.clone();
            let mut i = 2;
            while used.contains(&name) {
                name = format!("{base}\u{A0}#{i}");
                i += 1;
            }
        }
        used.push(name.clone());
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix};{name}")
        };
        let start = w.at;
        // The children's lines, then the own one (its time and that of the
        // children too thin to draw); the deepest level drawn holds its whole
        // subtree's time.
        let own = if depth + 1 >= MAX_DEPTH {
            width
        } else {
            n.own + lay(&n.children, &path, depth + 1, w)
        };
        if own > 0 {
            w.lines.push(format!("{path} {own}"));
            w.at += own;
        }
        let k = w
            .kinds
            .iter()
            .position(|k| *k == n.kind)
            .unwrap_or_else(|| {
                w.kinds.push(&n.kind);
                w.kinds.len() - 1
            });
        let share = 100.0 * width as f64 / w.all.max(1) as f64;
        w.placed.entry((start, width)).or_default().push(Placed {
            depth: depth + 1,
            title: format!(
                "{} ({}, {share:.2}%: {})",
                kprof_core::output::readable::table_name(&n.name, None),
                n.kind,
                n.details
            ),
            fill: colour(k),
        });
        debug_assert_eq!(w.at, start + width);
    }
    folded
}

/// The colour of the `k`th kind.
fn colour(k: usize) -> String {
    let c = PALETTE[k % PALETTE.len()];
    format!("rgb({},{},{})", c.0, c.1, c.2)
}

/// Replaces `s`'s characters that XML text cannot hold as they are.
fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The value of attribute `name` in the tag text `tag`.
fn attr<'t>(tag: &'t str, name: &str) -> Option<&'t str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    let len = tag[at..].find('"')?;
    Some(&tag[at..at + len])
}

/// Search matches a frame's name, not the numbers its title adds (inferno
/// matches the whole title; this script, after inferno's, replaces the one
/// function that reads it for search).
const SEARCH_NAMES: &str =
    "<script type=\"text/ecmascript\"><![CDATA[\nfunction g_to_func(e) { return g_to_text(e).replace(/ \\([^(]*\\)$/, \"\"); }\n]]></script>";

/// The flame graph of `roots` (none where no call path has time); `all` titles
/// the root frame (what the whole is).
pub fn flame(roots: &[PlotNode], all: &str) -> Result<Option<Flame>, Failure> {
    let total: u64 = roots.iter().map(subtree).sum();
    let mut w = Walk {
        lines: Vec::new(),
        at: 0,
        all: total,
        kinds: Vec::new(),
        placed: HashMap::new(),
    };
    lay(roots, "", 0, &mut w);
    let fail = |e: std::io::Error| Failure(format!("cannot draw the call-path flame graph: {e}"));
    let mut opt = inferno::flamegraph::Options::default();
    opt.direction = inferno::flamegraph::Direction::Inverted;
    opt.title = String::new();
    opt.count_name = "ns".into();
    opt.name_type = String::new();
    // Lines in the order given (inferno's flame chart mode: it reverses them
    // and merges them as they come; sorting would split a frame whose name
    // sorts between its children's).
    opt.flame_chart = true;
    opt.frame_height = FRAME_HEIGHT;
    // A fixed width, as the other figures (960 px), scaled by its viewBox where
    // the page is narrower: inferno's fluid width reads the SVG's width
    // attribute, which an SVG inside an HTML document does not resolve.
    opt.image_width = Some(super::figures::WIDTH as usize);
    opt.text_truncate_direction = inferno::flamegraph::TextTruncateDirection::Right;
    opt.min_width = 0.01;
    opt.hash = true;
    opt.deterministic = true;
    let mut out = Vec::new();
    if w.lines.is_empty() {
        return Ok(None);
    }
    inferno::flamegraph::from_lines(&mut opt, w.lines.iter().rev().map(String::as_str), &mut out)
        .map_err(fail)?;
    let svg = String::from_utf8(out).map_err(|e| Failure(format!("flame graph: {e}")))?;
    let svg = retitle(&svg, &mut w.placed, all);
    let height = svg
        .find("<svg ")
        .and_then(|i| attr(&svg[i..], "height"))
        .and_then(|h| h.parse().ok())
        .unwrap_or(200);
    Ok(Some(Flame {
        svg,
        height,
        kinds: w
            .kinds
            .iter()
            .enumerate()
            .map(|(k, n)| (n.to_string(), colour(k)))
            .collect(),
    }))
}

/// inferno's SVG with each frame's title and fill replaced by those laid out in
/// `placed`, and the search script added.
fn retitle(svg: &str, placed: &mut HashMap<(u64, u64), Vec<Placed>>, all: &str) -> String {
    // Frames at each (fg:x, fg:w), shallowest first, as laid out.
    for v in placed.values_mut() {
        v.sort_by_key(|p| p.depth);
    }
    // First pass: the frames' (title range, rect tag range, x, w, y).
    struct Frame {
        title: (usize, usize),
        label: Option<(usize, usize)>,
        fill: (usize, usize),
        key: (u64, u64),
        y: u64,
    }
    let mut frames = Vec::new();
    let mut from = 0;
    while let Some(i) = svg[from..].find("<g><title>") {
        let t0 = from + i + "<g><title>".len();
        let Some(t1) = svg[t0..].find("</title>").map(|j| t0 + j) else {
            break;
        };
        let r0 = t1 + "</title>".len();
        let Some(r1) = svg[r0..].find("/>").map(|j| r0 + j) else {
            break;
        };
        let rect = &svg[r0..r1];
        let num = |a: &str| attr(rect, a).and_then(|v| v.parse::<u64>().ok());
        if let (Some(x), Some(wd), Some(y), Some(f)) = (
            num("fg:x"),
            num("fg:w"),
            num("y"),
            rect.find(" fill=\"").map(|k| r0 + k + " fill=\"".len()),
        ) {
            let f1 = svg[f..].find('"').map_or(f, |k| f + k);
            // The label: the text of the <text> after the rect.
            let l0 = svg[r1..]
                .find("<text")
                .and_then(|k| svg[r1 + k..].find('>').map(|j| r1 + k + j + 1));
            let l1 = l0.and_then(|l| svg[l..].find("</text>").map(|j| l + j));
            frames.push(Frame {
                title: (t0, t1),
                label: l0.zip(l1),
                fill: (f, f1),
                key: (x, wd),
                y,
            });
        }
        from = r1;
    }
    // Frames sharing a position: shallowest (smallest y) first, as laid out.
    let mut order: Vec<usize> = (0..frames.len()).collect();
    order.sort_by_key(|&i| (frames[i].key, frames[i].y));
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut taken: HashMap<(u64, u64), usize> = HashMap::new();
    // The root frame ("all", inferno's own) is the only one at the top.
    let top = frames.iter().map(|f| f.y).min().unwrap_or(0);
    for i in order {
        let f = &frames[i];
        if f.y == top {
            edits.push((
                f.title.0,
                f.title.1,
                xml_text(&format!("all ({all}, 100%)")),
            ));
            edits.push((f.fill.0, f.fill.1, "rgb(215,215,215)".into()));
            if let Some((a, b)) = f.label {
                edits.push((a, b, "all".into()));
            }
            continue;
        }
        let seen = taken.entry(f.key).or_default();
        if let Some(p) = placed.get(&f.key).and_then(|v| v.get(*seen)) {
            edits.push((f.title.0, f.title.1, xml_text(&p.title)));
            edits.push((f.fill.0, f.fill.1, p.fill.clone()));
        }
        *seen += 1;
    }
    edits.sort_by_key(|e| e.0);
    let mut out = String::with_capacity(svg.len() + svg.len() / 4);
    let mut at = 0;
    for (a, b, text) in edits {
        out.push_str(&svg[at..a]);
        out.push_str(&text);
        at = b;
    }
    out.push_str(&svg[at..]);
    // The search script after inferno's (which ends its <script>).
    if let Some(i) = out.find("</script>") {
        out.insert_str(i + "</script>".len(), SEARCH_NAMES);
    }
    out
}
