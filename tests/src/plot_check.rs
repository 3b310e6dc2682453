//! Reading `kprof plot`'s bar figures back (the SVG parsed as XML): each bar's
//! row, width and colour, each row's label, the legend, and the value axis's
//! scale from its tick labels, so that a test compares what is drawn with an
//! independent reference (a harness's known bytes, a replay's log), not with
//! the profile kprof wrote.

use std::path::Path;

/// A text of the figure.
#[derive(Debug, Clone)]
pub struct Text {
    /// Its anchor point.
    pub x: f64,
    /// Its anchor point.
    pub y: f64,
    /// `start` (row labels, legend entries) or `middle` (axis ticks).
    pub anchor: String,
    /// Its content.
    pub text: String,
}

/// A filled rectangle of the figure (bars, legend swatches).
#[derive(Debug, Clone)]
pub struct Rect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width, pixels.
    pub width: f64,
    /// Its fill colour.
    pub fill: String,
}

/// A bar figure.
#[derive(Debug)]
pub struct Figure {
    /// Every text.
    pub texts: Vec<Text>,
    /// Every filled rectangle but the background.
    pub rects: Vec<Rect>,
}

impl Figure {
    /// Reads the SVG at `path`.
    pub fn read(path: &Path) -> Figure {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let doc = roxmltree::Document::parse(&text)
            .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
        let num = |n: &roxmltree::Node, a: &str| -> f64 {
            n.attribute(a)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{}: no number {a} in {n:?}", path.display()))
        };
        let texts = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| Text {
                x: num(&n, "x"),
                y: num(&n, "y"),
                anchor: n.attribute("text-anchor").unwrap_or("start").to_string(),
                text: n.text().unwrap_or_default().trim().to_string(),
            })
            .collect();
        let rects = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter(|n| !matches!(n.attribute("fill"), None | Some("none") | Some("#FFFFFF")))
            .map(|n| Rect {
                x: num(&n, "x"),
                y: num(&n, "y"),
                width: num(&n, "width"),
                fill: n.attribute("fill").unwrap().to_string(),
            })
            .collect();
        Figure { texts, rects }
    }

    /// Pixels per unit of the value axis: from its tick labels (centred texts
    /// that `value` reads), the first and the last, which must agree with every
    /// tick between.
    pub fn px_per_unit(&self, value: fn(&str) -> Option<f64>) -> f64 {
        let ticks: Vec<(f64, f64)> = self
            .texts
            .iter()
            .filter(|t| t.anchor == "middle")
            .filter_map(|t| Some((value(&t.text)?, t.x)))
            .collect();
        assert!(ticks.len() >= 2, "ticks: {:?}", self.texts);
        let (v0, x0) = ticks[0];
        let (v1, x1) = ticks[ticks.len() - 1];
        let scale = (x1 - x0) / (v1 - v0);
        for (v, x) in &ticks {
            assert!(
                (x0 + (v - v0) * scale - x).abs() <= 1.0,
                "tick {v} at {x}, not on the scale of {ticks:?}"
            );
        }
        scale
    }

    /// The bars of the rows labelled by the texts `is_row` accepts, top to
    /// bottom: (label, the bars below it and above the next label).
    pub fn rows(&self, is_row: impl Fn(&Text) -> bool) -> Vec<(String, Vec<Rect>)> {
        let mut labels: Vec<&Text> = self.texts.iter().filter(|t| is_row(t)).collect();
        labels.sort_by(|a, b| a.y.total_cmp(&b.y));
        let left = labels.iter().map(|t| t.x).fold(f64::MAX, f64::min);
        labels
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let below = labels.get(i + 1).map_or(f64::MAX, |n| n.y);
                let bars = self
                    .rects
                    .iter()
                    .filter(|r| r.x < left && r.y + 6.0 >= t.y && r.y + 6.0 < below)
                    .cloned()
                    .collect();
                (t.text.clone(), bars)
            })
            .collect()
    }

    /// The legend: each entry's name and its swatch's colour.
    pub fn legend(&self) -> Vec<(String, String)> {
        self.texts
            .iter()
            .filter_map(|t| {
                let swatch = self
                    .rects
                    .iter()
                    .find(|r| r.x > t.x - 24.0 && r.x < t.x && (r.y - t.y).abs() <= 2.0)?;
                Some((t.text.clone(), swatch.fill.clone()))
            })
            .collect()
    }
}

/// A duration as `kprof` writes it (`250.00 us`), in ns.
pub fn duration_ns(s: &str) -> Option<f64> {
    let (n, unit) = s.split_once(' ')?;
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(n.parse::<f64>().ok()? * scale)
}

/// A byte count as `kprof` writes it (`16 KiB`), in bytes.
pub fn bytes(s: &str) -> Option<f64> {
    let (n, unit) = s.split_once(' ')?;
    let scale = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n.parse::<f64>().ok()? * scale)
}

/// A frame of inferno's flame graph SVG: its title (the tooltip text), its
/// position and width in inferno's own units (`fg:x`, `fg:w`) and its row.
#[derive(Debug, Clone)]
pub struct FlameFrame {
    /// The tooltip text.
    pub title: String,
    /// Start, in the graph's units (its samples: here, nanoseconds).
    pub x: u64,
    /// Width, in the same units.
    pub w: u64,
    /// The rectangle's `y` (its row).
    pub y: f64,
}

/// The frames of inferno's flame graph SVG `text`.
pub fn flame_frames(text: &str) -> Vec<FlameFrame> {
    // inferno's SVG declares its DTD (it names no entity).
    let opt = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opt).expect("the flame graph is XML");
    let frames = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("frames"))
        .expect("inferno's frames");
    frames
        .children()
        .filter(|g| g.has_tag_name("g"))
        .map(|g| {
            let title = g.children().find(|c| c.has_tag_name("title")).unwrap();
            let rect = g.children().find(|c| c.has_tag_name("rect")).unwrap();
            let fg = |name: &str| -> u64 {
                rect.attributes()
                    .find(|a| a.name() == name && a.namespace().is_some())
                    .unwrap_or_else(|| panic!("fg:{name}"))
                    .value()
                    .parse()
                    .unwrap()
            };
            FlameFrame {
                title: title.text().unwrap_or_default().to_string(),
                x: fg("x"),
                w: fg("w"),
                y: rect.attribute("y").unwrap().parse().unwrap(),
            }
        })
        .collect()
}
