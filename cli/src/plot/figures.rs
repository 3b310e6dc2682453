//! The figures of `kprof plot`, each drawn with plotters into an SVG string.
//!
//! plotters (its SVG back end only, no fonts or bitmaps) draws the axes, bars,
//! points, legends and text; the icicle chart and the heat map are its rectangles
//! placed in its coordinates. Every bar of a series has that series' colour, so a
//! reader (and the tests) can count them in the SVG.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::fmt::{bytes, duration};
use crate::outcome::Failure;

/// Width of every figure, in pixels.
pub const WIDTH: u32 = 960;

/// The bars of the top chart, the icicle's default and the scatter's points.
pub const BAR: RGBColor = RGBColor(70, 130, 180);
/// A third series (min).
pub const BAR3: RGBColor = RGBColor(106, 168, 79);

/// Colours of categories and kinds, in turn.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(70, 130, 180),
    RGBColor(230, 145, 56),
    RGBColor(106, 168, 79),
    RGBColor(204, 65, 37),
    RGBColor(142, 124, 195),
    RGBColor(241, 194, 50),
    RGBColor(69, 129, 142),
    RGBColor(194, 123, 160),
    RGBColor(120, 120, 120),
    RGBColor(200, 200, 200),
];

/// One drawn figure.
pub struct Figure {
    /// File name stem (`top`, `icicle`, ...).
    pub id: &'static str,
    /// Heading.
    pub title: String,
    /// One line saying what it shows.
    pub note: String,
    /// The SVG document.
    pub svg: String,
    /// How the page shows it, where not as the SVG inline.
    pub page: Option<String>,
}

/// A node of the call-path tree, as the flame graph draws it (one process's
/// tree, or a merged tree's means over ranks).
pub struct PlotNode {
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Exclusive time per thread of its team, ns: its own width in the graph.
    pub own: u64,
    /// Its numbers as the hover shows them (no parenthesis: the graph's script
    /// cuts a title's last parenthesised group off for the frame's label).
    pub details: String,
    /// Nested nodes.
    pub children: Vec<PlotNode>,
}

/// `name` as a label: control characters escaped, at most `width` characters.
pub fn label(name: &str, width: usize) -> String {
    kprof_core::output::readable::table_name(name, Some(width))
}

fn err(what: &str) -> impl Fn(Box<dyn std::fmt::Display>) -> Failure + '_ {
    move |e| Failure(format!("cannot draw the {what} figure: {e}"))
}

/// Runs `draw` on an SVG drawing area of `height` and returns the SVG text.
fn svg(
    what: &str,
    height: u32,
    draw: impl FnOnce(
        &DrawingArea<SVGBackend, plotters::coord::Shift>,
    ) -> Result<(), Box<dyn std::fmt::Display>>,
) -> Result<String, Failure> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(what)(Box::new(e)))?;
        draw(&root).map_err(err(what))?;
        root.present().map_err(|e| err(what)(Box::new(e)))?;
    }
    Ok(out)
}

/// Boxes a drawing error (plotters' errors are generic over the back end).
fn b<E: std::fmt::Display + 'static>(e: E) -> Box<dyn std::fmt::Display> {
    Box::new(e)
}

/// What a value axis measures: where its ticks go and how they read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// ns: ticks at 1, 2 or 5 x 10^k ns, read as durations.
    Time,
    /// Bytes: ticks at 2^k bytes (whole KiB, MiB, ... past 1 KiB), read in
    /// binary units (`32 KiB`, `1.5 MiB`): plotters' own ticks are decimal
    /// (97.66 KiB).
    Bytes,
}

impl Axis {
    /// Ticks from 0 to `max`, at most 8 of them after 0.
    pub fn ticks(self, max: f64) -> Vec<f64> {
        let max = max.max(1.0);
        let step = match self {
            Axis::Time => {
                let mut step = 10f64.powi((max / 8.0).log10().floor() as i32).max(1.0);
                for m in [1.0, 2.0, 5.0, 10.0] {
                    if max / (step * m) <= 8.0 {
                        step *= m;
                        break;
                    }
                }
                step
            }
            Axis::Bytes => (max / 8.0).max(1.0).log2().ceil().exp2(),
        };
        (0..=(max / step).floor() as u64)
            .map(|i| i as f64 * step)
            .collect()
    }

    /// A tick's label.
    pub fn label(self, v: f64) -> String {
        match self {
            Axis::Time => duration(v),
            Axis::Bytes => byte_tick(v),
        }
    }
}

/// A value axis from 0 whose ticks are the given ones (plotters would choose
/// decimal ones).
pub struct Ticked {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    /// The axis from 0 to `max`, ticked as `axis` ticks.
    pub fn new(max: f64, axis: Axis) -> Ticked {
        Ticked {
            inner: (0f64..max).into(),
            ticks: axis.ticks(max),
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }
    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }
    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

/// A byte count at a binary tick: in the largest binary unit not above it,
/// without trailing zeros (`0 B`, `512 B`, `32 KiB`, `1.5 MiB`).
pub fn byte_tick(v: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut i = 0;
    while i + 1 < UNITS.len() && v >= 1024f64.powi(i as i32 + 1) {
        i += 1;
    }
    let x = v / 1024f64.powi(i as i32);
    let text = format!("{x:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {}", UNITS[i])
}

/// How a legend entry marks its series.
#[derive(Clone, Copy)]
enum Mark {
    Square,
    Dot,
    Line,
}

/// Height of a legend of `n` entries, px.
fn key_height(n: usize) -> u32 {
    18 + 18 * n as u32
}

/// A legend: `entries` one a line in a box at the top of `area` (an area of
/// its own beside or below the plot, so that it covers nothing drawn).
fn key(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    entries: &[(String, RGBColor)],
    mark: Mark,
) -> Result<(), Box<dyn std::fmt::Display>> {
    if entries.is_empty() {
        return Ok(());
    }
    let (w, _) = area.dim_in_pixel();
    let w = w as i32;
    area.draw(&Rectangle::new(
        [(4, 4), (w - 6, 4 + key_height(entries.len()) as i32 - 8)],
        BLACK.mix(0.3),
    ))
    .map_err(b)?;
    let chars = ((w - 46) / 7).max(4) as usize;
    for (i, (name, c)) in entries.iter().enumerate() {
        let y = 4 + 14 + 18 * i as i32;
        match mark {
            Mark::Square => area.draw(&Rectangle::new([(12, y - 5), (22, y + 5)], c.filled())),
            Mark::Dot => area.draw(&Circle::new((17, y), 4, c.filled())),
            // 3 px: the series' own lines are 2 px wide.
            Mark::Line => area.draw(&PathElement::new(vec![(10, y), (24, y)], c.stroke_width(3))),
        }
        .map_err(b)?;
        area.draw(&Text::new(
            label(name, chars),
            (30, y - 6),
            ("sans-serif", 12).into_font(),
        ))
        .map_err(b)?;
    }
    Ok(())
}

/// Width of a legend column beside a plot, px.
const KEY_WIDTH: u32 = 170;

/// Horizontal bars, longest first: `(label, value)`; `fmt` writes a value.
pub fn bars(
    id: &'static str,
    title: &str,
    note: String,
    rows: &[(String, f64)],
    fmt: fn(f64) -> String,
) -> Result<Figure, Failure> {
    let n = rows.len().max(1);
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(1.0);
    let height = 60 + 26 * n as u32;
    let svg = svg(title, height, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(24)
            .y_label_area_size(0)
            .build_cartesian_2d(0f64..max * 1.25, 0f64..n as f64)
            .map_err(b)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_labels(6)
            .x_label_formatter(&|v| fmt(*v))
            .draw()
            .map_err(b)?;
        // Row 0 at the top.
        let y = |i: usize| (n - 1 - i) as f64;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (_, v))| {
                Rectangle::new(
                    [(0.0, y(i) + 0.15), (*v, y(i) + 0.85)],
                    BAR.mix(0.55).filled(),
                )
            }))
            .map_err(b)?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (name, v))| {
                Text::new(
                    format!("{}  {}", label(name, 70), fmt(*v)),
                    (max * 0.005, y(i) + 0.7),
                    ("sans-serif", 13).into_font(),
                )
            }))
            .map_err(b)?;
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
        page: None,
    })
}

/// Bars of several series per row (`series` names them, each its colour, in a
/// legend beside the bars), for min/mean/max comparisons; `axis` says what the
/// values are.
pub fn grouped(
    id: &'static str,
    title: &str,
    note: String,
    series: &[&str],
    rows: &[(String, Vec<f64>)],
    axis: Axis,
) -> Result<Figure, Failure> {
    let n = rows.len().max(1);
    let k = series.len().max(1);
    let max = rows
        .iter()
        .flat_map(|r| r.1.iter().copied())
        .fold(0.0, f64::max)
        .max(1.0);
    let height = (80 + (14 * k as u32 + 22) * n as u32).max(30 + key_height(k));
    let svg = svg(title, height, |root| {
        let (plot, legend) = root.split_horizontally(WIDTH - KEY_WIDTH);
        let mut chart = ChartBuilder::on(&plot)
            .margin(10)
            .x_label_area_size(24)
            .y_label_area_size(0)
            .build_cartesian_2d(Ticked::new(max * 1.05, axis), 0f64..n as f64)
            .map_err(b)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_label_formatter(&|v| axis.label(*v))
            .draw()
            .map_err(b)?;
        let y = |i: usize| (n - 1 - i) as f64;
        let band = 0.62 / k as f64;
        for s in 0..series.len() {
            let color = PALETTE[s % PALETTE.len()];
            chart
                .draw_series(rows.iter().enumerate().map(|(i, (_, v))| {
                    let top = y(i) + 0.7 - s as f64 * band;
                    Rectangle::new(
                        [
                            (0.0, top - band * 0.9),
                            (v.get(s).copied().unwrap_or(0.0), top),
                        ],
                        color.filled(),
                    )
                }))
                .map_err(b)?;
        }
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (name, _))| {
                Text::new(
                    label(name, 90),
                    (max * 0.005, y(i) + 0.95),
                    ("sans-serif", 12).into_font(),
                )
            }))
            .map_err(b)?;
        let entries: Vec<(String, RGBColor)> = series
            .iter()
            .enumerate()
            .map(|(s, name)| (name.to_string(), PALETTE[s % PALETTE.len()]))
            .collect();
        key(&legend.margin(10, 0, 0, 0), &entries, Mark::Square)?;
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
        page: None,
    })
}

/// Stacked horizontal bars: per row, the shares (percent) of each category, on
/// an axis from 0 to 100%, the categories' legend beside it.
pub fn stacked(
    id: &'static str,
    title: &str,
    note: String,
    categories: &[String],
    rows: &[(String, Vec<f64>)],
) -> Result<Figure, Failure> {
    let n = rows.len().max(1);
    let height = (50 + 34 * n as u32).max(30 + key_height(categories.len()));
    let svg = svg(title, height, |root| {
        let (plot, legend) = root.split_horizontally(WIDTH - KEY_WIDTH);
        let mut chart = ChartBuilder::on(&plot)
            .margin(10)
            .x_label_area_size(24)
            .y_label_area_size(0)
            .build_cartesian_2d(
                Ticked {
                    inner: (0f64..100.0).into(),
                    ticks: (0..=10).map(|i| i as f64 * 10.0).collect(),
                },
                0f64..n as f64,
            )
            .map_err(b)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_label_formatter(&|v| format!("{v:.0}%"))
            .draw()
            .map_err(b)?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (name, _))| {
                Text::new(
                    label(name, 60),
                    (0.3, (n - 1 - i) as f64 + 0.97),
                    ("sans-serif", 12).into_font(),
                )
            }))
            .map_err(b)?;
        let y = |i: usize| (n - 1 - i) as f64;
        for c in 0..categories.len() {
            let color = PALETTE[c % PALETTE.len()];
            chart
                .draw_series(rows.iter().enumerate().map(|(i, (_, v))| {
                    let from: f64 = v[..c].iter().sum();
                    // Shares that add up past 100% by rounding stay inside the axis.
                    Rectangle::new(
                        [
                            (from.min(100.0), y(i) + 0.08),
                            ((from + v[c]).min(100.0), y(i) + 0.62),
                        ],
                        color.filled(),
                    )
                }))
                .map_err(b)?;
        }
        let entries: Vec<(String, RGBColor)> = categories
            .iter()
            .enumerate()
            .map(|(c, name)| (name.clone(), PALETTE[c % PALETTE.len()]))
            .collect();
        key(&legend.margin(10, 0, 0, 0), &entries, Mark::Square)?;
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
        page: None,
    })
}

/// The colour of a heat map's totals row and column.
pub const TOTALS: RGBColor = RGBColor(120, 120, 120);

/// A heat map: rows x columns of values, darker for more; `rows` and `cols` label
/// them. With `totals`, a last column and row `all` hold each row's and
/// column's sum (and the grand total), grey, shaded on their own scale so that
/// the cells keep theirs.
pub fn heatmap(
    id: &'static str,
    title: &str,
    note: String,
    rows: &[String],
    cols: &[String],
    values: &[Vec<f64>],
    totals: bool,
) -> Result<Figure, Failure> {
    let max = values
        .iter()
        .flatten()
        .copied()
        .fold(0.0, f64::max)
        .max(1.0);
    let (mut rows, mut cols, mut values) = (rows.to_vec(), cols.to_vec(), values.to_vec());
    // (row, column) of a totals cell, or None for a cell of the matrix.
    let (cell_rows, cell_cols) = (rows.len(), cols.len());
    if totals {
        for row in values.iter_mut() {
            row.resize(cell_cols, 0.0);
            row.push(row.iter().sum());
        }
        let sums: Vec<f64> = (0..=cell_cols)
            .map(|c| values.iter().map(|r| r[c]).sum())
            .collect();
        values.push(sums);
        rows.push("all".into());
        cols.push("all".into());
    }
    let totals_max = if totals {
        values
            .iter()
            .enumerate()
            .flat_map(|(r, row)| {
                row.iter()
                    .enumerate()
                    .filter(move |&(c, _)| (r == cell_rows) != (c == cell_cols))
                    .map(|(_, v)| *v)
            })
            .fold(0.0, f64::max)
            .max(1.0)
    } else {
        1.0
    };
    let shade =
        |r: usize, c: usize, v: f64| match (totals && r == cell_rows, totals && c == cell_cols) {
            (false, false) => (BAR3, 0.15 + 0.85 * v / max),
            (true, true) => (TOTALS, 1.0),
            _ => (TOTALS, 0.15 + 0.85 * v / totals_max),
        };
    let (rows, cols, values) = (&rows[..], &cols[..], &values[..]);
    let (nr, nc) = (rows.len().max(1), cols.len().max(1));
    let height = (80 + (24 * nr as u32).min(600)).max(230);
    let svg = svg(title, height, |root| {
        let (plot, scale) = root.split_horizontally(WIDTH - 190);
        // Segmented axes: a label at the centre of every cell's row and column
        // (plain numeric axes put them at round values, between cells).
        let mut chart = ChartBuilder::on(&plot)
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(220)
            .build_cartesian_2d((0..nc).into_segmented(), (0..nr).into_segmented())
            .map_err(b)?;
        let centre = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => Some(*i),
            _ => None,
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(nc + 1)
            .y_labels(nr + 1)
            .x_label_formatter(&|v| {
                centre(v)
                    .and_then(|i| cols.get(i).cloned())
                    .unwrap_or_default()
            })
            .y_label_formatter(&|v| {
                centre(v)
                    .and_then(|i| rows.get(nr - 1 - i))
                    .map(|r| label(r, 30))
                    .unwrap_or_default()
            })
            .draw()
            .map_err(b)?;
        let cell = |r: usize, c: usize| {
            let y = nr - 1 - r;
            [
                (SegmentValue::Exact(c), SegmentValue::Exact(y)),
                (SegmentValue::Exact(c + 1), SegmentValue::Exact(y + 1)),
            ]
        };
        chart
            .draw_series(values.iter().enumerate().flat_map(|(r, row)| {
                row.iter()
                    .enumerate()
                    .filter(|(_, v)| **v > 0.0)
                    .map(move |(c, v)| {
                        let (colour, t) = shade(r, c, *v);
                        Rectangle::new(cell(r, c), colour.mix(t).filled())
                    })
            }))
            .map_err(b)?;
        // Each cell's value where the cell has room for it (a short byte
        // count is about 7 px a character, 14 px tall), white on dark.
        // A cell's corners in pixels of the plotting area (its axes hold one
        // segment more than the cells).
        let area = chart.plotting_area();
        let base = area.get_base_pixel();
        let corner = |r: usize, c: usize| {
            let p = area.map_coordinate(&(SegmentValue::Exact(c), SegmentValue::Exact(nr - r)));
            (p.0 - base.0, p.1 - base.1)
        };
        let (a, z) = (corner(0, 0), corner(1, 1));
        let (cw, ch) = ((z.0 - a.0).abs() as f64, (z.1 - a.1).abs() as f64);
        if ch >= 14.0 {
            let strip = area.strip_coord_spec();
            for (r, row) in values.iter().enumerate() {
                for (c, v) in row.iter().enumerate() {
                    let text = cell_bytes(*v);
                    if *v <= 0.0 || text.len() as f64 * 6.5 + 4.0 > cw {
                        continue;
                    }
                    let (_, t) = shade(r, c, *v);
                    let colour = if t > 0.6 { WHITE } else { BLACK };
                    let style = ("sans-serif", 12)
                        .into_font()
                        .color(&colour)
                        .pos(Pos::new(HPos::Center, VPos::Center));
                    let (x0, y0) = corner(r, c);
                    let pos = (x0 + (cw / 2.0) as i32, y0 + (ch / 2.0) as i32);
                    strip.draw(&Text::new(text, pos, style)).map_err(b)?;
                }
            }
        }
        // The colour scale: the cells' shades from the least to the most bytes,
        // and the totals' grey one beside it.
        let scale = scale.margin(14, 30, 10, 10);
        let (_, sh) = scale.dim_in_pixel();
        let steps = 40;
        let bar = |x: i32,
                   colour: RGBColor,
                   top: f64,
                   name: &str|
         -> Result<(), Box<dyn std::fmt::Display>> {
            let h = sh as i32 - 20;
            for i in 0..steps {
                let t0 = i as f64 / steps as f64;
                let y0 = 14 + h - ((i + 1) * h / steps);
                let y1 = 14 + h - (i * h / steps);
                // Blended over white here (the cells are drawn with an
                // opacity): the scale's steps are no cells.
                let t = 0.15 + 0.85 * (t0 + 0.5 / steps as f64);
                let over_white = |c: u8| (255.0 - t * (255.0 - c as f64)).round() as u8;
                let step = RGBColor(
                    over_white(colour.0),
                    over_white(colour.1),
                    over_white(colour.2),
                );
                scale
                    .draw(&Rectangle::new([(x, y0), (x + 14, y1)], step.filled()))
                    .map_err(b)?;
            }
            scale
                .draw(&Rectangle::new([(x, 14), (x + 14, 14 + h)], BLACK.mix(0.3)))
                .map_err(b)?;
            scale
                .draw(&Text::new(
                    name.to_string(),
                    (x - 2, 0),
                    ("sans-serif", 11).into_font(),
                ))
                .map_err(b)?;
            for (v, y) in [(top, 14), (top / 2.0, 14 + h / 2), (0.0, 14 + h)] {
                scale
                    .draw(&Text::new(
                        fmt_bytes(v),
                        (x + 18, y - 6),
                        ("sans-serif", 11).into_font(),
                    ))
                    .map_err(b)?;
            }
            Ok(())
        };
        bar(0, BAR3, max, "bytes")?;
        if totals {
            bar(92, TOTALS, totals_max, "totals")?;
        }
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
        page: None,
    })
}

/// A byte count short enough for a heat map's cell: two or three digits and a
/// binary unit (`40 B`, `2.3 KiB`, `12 KiB`, `512 MiB`).
fn cell_bytes(v: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut i = 0;
    let mut x = v.max(0.0);
    while i + 1 < UNITS.len() && x >= 1024.0 {
        x /= 1024.0;
        i += 1;
    }
    if i == 0 || x >= 9.95 {
        format!("{x:.0} {}", UNITS[i])
    } else {
        format!("{x:.1} {}", UNITS[i])
    }
}

/// Instance durations over time: per series (a call path) its (start, duration)
/// samples as points, start in ns since the run began, the legend below the
/// plot. The duration axis runs to the longest instance drawn (those starting
/// within the run), on a log scale where the durations span more than a
/// factor of 100 (a linear one would put all but the longest on 0).
pub fn scatter(
    note: String,
    series: &[(String, Vec<(f64, f64)>)],
    run_ns: f64,
) -> Result<Figure, Failure> {
    let run_ns = run_ns.max(1.0);
    let drawn = |p: &&(f64, f64)| (0.0..=run_ns).contains(&p.0) && p.1 > 0.0;
    let durations = || {
        series
            .iter()
            .flat_map(|s| s.1.iter().filter(drawn).map(|p| p.1))
    };
    let max = durations().fold(0.0, f64::max).max(1.0);
    let min = durations().fold(f64::INFINITY, f64::min).min(max);
    let log = max / min > 100.0;
    let plot_h = 380;
    let height = plot_h + key_height(series.len()) + 6;
    let svg = svg("scatter", height, |root| {
        let (plot, legend) = root.split_vertically(plot_h);
        let mut builder = ChartBuilder::on(&plot);
        let chart = builder
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(80);
        let points = |c: usize| {
            let color = PALETTE[c % PALETTE.len()];
            series[c]
                .1
                .iter()
                .filter(drawn)
                .map(move |p| Circle::new(*p, 3, color.mix(0.75).filled()))
                .collect::<Vec<_>>()
        };
        if log {
            let mut chart = chart
                .build_cartesian_2d(0f64..run_ns, (min / 1.5..max * 1.1).log_scale())
                .map_err(b)?;
            chart
                .configure_mesh()
                .x_labels(6)
                .y_labels(8)
                .x_label_formatter(&|v| duration(*v))
                .y_label_formatter(&|v| duration(*v))
                .x_desc("start")
                .y_desc("duration (log scale)")
                .draw()
                .map_err(b)?;
            for c in 0..series.len() {
                chart.draw_series(points(c)).map_err(b)?;
            }
        } else {
            let mut chart = chart
                .build_cartesian_2d(0f64..run_ns, 0f64..max * 1.1)
                .map_err(b)?;
            chart
                .configure_mesh()
                .x_labels(6)
                .y_labels(6)
                .x_label_formatter(&|v| duration(*v))
                .y_label_formatter(&|v| duration(*v))
                .x_desc("start")
                .y_desc("duration")
                .draw()
                .map_err(b)?;
            for c in 0..series.len() {
                chart.draw_series(points(c)).map_err(b)?;
            }
        }
        let entries: Vec<(String, RGBColor)> = series
            .iter()
            .enumerate()
            .map(|(c, (name, _))| (name.clone(), PALETTE[c % PALETTE.len()]))
            .collect();
        key(&legend.margin(0, 0, 80, 10), &entries, Mark::Dot)?;
        Ok(())
    })?;
    Ok(Figure {
        id: "scatter",
        title: "Instance durations over time".into(),
        note,
        svg,
        page: None,
    })
}

/// Series over the run's time in buckets `bucket_ns` wide, drawn as steps (a
/// bucket's value holds across it).
fn steps(values: &[f64], bucket_ns: f64, run_ns: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(2 * values.len());
    for (i, &v) in values.iter().enumerate() {
        let (a, b) = (
            i as f64 * bucket_ns,
            ((i + 1) as f64 * bucket_ns).min(run_ns),
        );
        out.push((a, v));
        out.push((b.max(a), v));
    }
    out
}

/// Series over time stacked as areas, the first at the bottom: one filled
/// polygon per series from 0 to the sum of it and those below it, drawn top
/// one first (so each polygon holds the series under it too).
pub fn stacked_over_time(
    id: &'static str,
    title: &str,
    note: String,
    series: &[(String, Vec<f64>)],
    bucket_ns: f64,
    run_ns: f64,
    y_desc: &str,
) -> Result<Figure, Failure> {
    let buckets = series.iter().map(|s| s.1.len()).max().unwrap_or(0);
    let mut sums: Vec<Vec<f64>> = Vec::with_capacity(series.len());
    let mut below = vec![0.0; buckets];
    for (_, v) in series {
        for (acc, x) in below.iter_mut().zip(v) {
            *acc += x;
        }
        sums.push(below.clone());
    }
    let max = below.iter().copied().fold(0.0, f64::max).max(1.0);
    let svg = svg(title, 380.max(30 + key_height(series.len())), |root| {
        let (plot, legend) = root.split_horizontally(WIDTH - KEY_WIDTH);
        let mut chart = ChartBuilder::on(&plot)
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..run_ns.max(1.0), 0f64..max * 1.05)
            .map_err(b)?;
        chart
            .configure_mesh()
            .x_labels(8)
            .y_labels(6)
            .x_label_formatter(&|v| duration(*v))
            .x_desc("time since start")
            .y_desc(y_desc)
            .draw()
            .map_err(b)?;
        for c in (0..series.len()).rev() {
            let color = PALETTE[c % PALETTE.len()];
            chart
                .draw_series(AreaSeries::new(
                    steps(&sums[c], bucket_ns, run_ns),
                    0.0,
                    color.filled(),
                ))
                .map_err(b)?;
        }
        // The legend top down as the areas stack (the last on top).
        let entries: Vec<(String, RGBColor)> = series
            .iter()
            .enumerate()
            .rev()
            .map(|(c, (name, _))| (name.clone(), PALETTE[c % PALETTE.len()]))
            .collect();
        key(&legend.margin(10, 0, 0, 0), &entries, Mark::Square)?;
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
        page: None,
    })
}

/// Series over time as step lines, one polyline each, the legend beside them;
/// `axis` says what the values are.
pub fn lines_over_time(
    id: &'static str,
    title: &str,
    note: String,
    series: &[(String, Vec<f64>)],
    bucket_ns: f64,
    run_ns: f64,
    axis: Axis,
) -> Result<Figure, Failure> {
    let max = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .fold(0.0, f64::max)
        .max(1.0);
    let svg = svg(title, 380.max(30 + key_height(series.len())), |root| {
        let (plot, legend) = root.split_horizontally(WIDTH - KEY_WIDTH);
        let mut chart = ChartBuilder::on(&plot)
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..run_ns.max(1.0), Ticked::new(max * 1.05, axis))
            .map_err(b)?;
        chart
            .configure_mesh()
            .x_labels(8)
            .x_label_formatter(&|v| duration(*v))
            .y_label_formatter(&|v| axis.label(*v))
            .x_desc("time since start")
            .draw()
            .map_err(b)?;
        for (c, (_, values)) in series.iter().enumerate() {
            let color = PALETTE[c % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(
                    steps(values, bucket_ns, run_ns),
                    color.stroke_width(2),
                ))
                .map_err(b)?;
        }
        let entries: Vec<(String, RGBColor)> = series
            .iter()
            .enumerate()
            .map(|(c, (name, _))| (name.clone(), PALETTE[c % PALETTE.len()]))
            .collect();
        key(&legend.margin(10, 0, 0, 0), &entries, Mark::Line)?;
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
        page: None,
    })
}

/// Bytes for axis labels.
pub fn fmt_bytes(v: f64) -> String {
    bytes(v.max(0.0) as u64)
}
