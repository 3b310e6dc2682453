//! The figures of `kprof plot`, each drawn with plotters into an SVG string.
//!
//! plotters (its SVG back end only, no fonts or bitmaps) draws the axes, bars,
//! points, legends and text; the icicle chart and the heat map are its rectangles
//! placed in its coordinates. Every bar of a series has that series' colour, so a
//! reader (and the tests) can count them in the SVG.

use plotters::prelude::*;

use crate::fmt::{bytes, duration};
use crate::outcome::Failure;

/// Width of every figure, in pixels.
pub const WIDTH: u32 = 960;

/// The bars of the top chart, the icicle's default and the scatter's points.
pub const BAR: RGBColor = RGBColor(70, 130, 180);
/// A third series (min).
pub const BAR3: RGBColor = RGBColor(106, 168, 79);

/// Colours of categories and kinds, in turn.
const PALETTE: [RGBColor; 10] = [
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
}

/// A node of the call-path tree, as the figures draw it (one process's tree, or
/// a merged tree's means over ranks).
pub struct PlotNode {
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Inclusive time (per thread of its team).
    pub total: f64,
    /// The threads of its team (1: none).
    pub threads: u32,
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
    })
}

/// Bars of several series per row (`series` names them, each its colour), for
/// min/mean/max comparisons.
pub fn grouped(
    id: &'static str,
    title: &str,
    note: String,
    series: &[&str],
    rows: &[(String, Vec<f64>)],
    fmt: fn(f64) -> String,
) -> Result<Figure, Failure> {
    let n = rows.len().max(1);
    let k = series.len().max(1);
    let max = rows
        .iter()
        .flat_map(|r| r.1.iter().copied())
        .fold(0.0, f64::max)
        .max(1.0);
    let height = 80 + (14 * k as u32 + 22) * n as u32;
    let svg = svg(title, height, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(24)
            .y_label_area_size(0)
            .build_cartesian_2d(0f64..max * 1.3, 0f64..n as f64)
            .map_err(b)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_labels(6)
            .x_label_formatter(&|v| fmt(*v))
            .draw()
            .map_err(b)?;
        let y = |i: usize| (n - 1 - i) as f64;
        let band = 0.62 / k as f64;
        for (s, name) in series.iter().enumerate() {
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
                .map_err(b)?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
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
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(b)?;
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
    })
}

/// Stacked horizontal bars: per row, the shares (percent) of each category.
pub fn stacked(
    id: &'static str,
    title: &str,
    note: String,
    categories: &[String],
    rows: &[(String, Vec<f64>)],
) -> Result<Figure, Failure> {
    let n = rows.len().max(1);
    let height = 90 + 34 * n as u32;
    let svg = svg(title, height, |root| {
        // Right of 100% stays free for the legend.
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(24)
            .y_label_area_size(0)
            .build_cartesian_2d(0f64..130.0, 0f64..n as f64)
            .map_err(b)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_labels(14)
            .x_label_formatter(&|v| {
                if *v <= 100.0 {
                    format!("{v:.0}%")
                } else {
                    String::new()
                }
            })
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
        for (c, cat) in categories.iter().enumerate() {
            let color = PALETTE[c % PALETTE.len()];
            chart
                .draw_series(rows.iter().enumerate().map(|(i, (_, v))| {
                    let from: f64 = v[..c].iter().sum();
                    Rectangle::new(
                        [(from, y(i) + 0.08), (from + v[c], y(i) + 0.62)],
                        color.filled(),
                    )
                }))
                .map_err(b)?
                .label(cat.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(b)?;
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
    })
}

/// The call-path tree as an icicle chart: one row per depth, each node as wide as
/// its inclusive time, under its parent; colour by kind.
pub fn icicle(roots: &[PlotNode], note: String) -> Result<Figure, Failure> {
    const MAX_DEPTH: usize = 14;
    fn depth(list: &[PlotNode]) -> usize {
        list.iter()
            .map(|n| 1 + depth(&n.children))
            .max()
            .unwrap_or(0)
    }
    let rows = depth(roots).clamp(1, MAX_DEPTH);
    let total: f64 = roots.iter().map(|n| n.total).sum::<f64>().max(1.0);
    let mut kinds: Vec<&str> = Vec::new();
    // (x0, x1, depth, node, kind index)
    let mut cells: Vec<(f64, f64, usize, &PlotNode, usize)> = Vec::new();
    // Nodes are drawn per thread of their team (a team's implicit tasks no
    // wider than the region of one thread around them); nested nodes that
    // would still outlast their parent are scaled to fit inside it.
    fn place<'a>(
        list: &'a [PlotNode],
        x: f64,
        d: usize,
        scale: f64,
        total: f64,
        kinds: &mut Vec<&'a str>,
        cells: &mut Vec<(f64, f64, usize, &'a PlotNode, usize)>,
    ) {
        let mut at = x;
        for n in list {
            let w = n.total * scale;
            // Too thin to see (under 0.1%): left out with its subtree.
            if d >= MAX_DEPTH || w < total * 0.001 {
                at += w;
                continue;
            }
            let k = kinds.iter().position(|k| *k == n.kind).unwrap_or_else(|| {
                kinds.push(&n.kind);
                kinds.len() - 1
            });
            cells.push((at, at + w, d, n, k));
            let nested: f64 = n.children.iter().map(|c| c.total).sum();
            let fit = if nested > n.total && nested > 0.0 {
                n.total / nested
            } else {
                1.0
            };
            place(&n.children, at, d + 1, scale * fit, total, kinds, cells);
            at += w;
        }
    }
    place(roots, 0.0, 0, 1.0, total, &mut kinds, &mut cells);
    let height = (70 + 30 * rows as u32).max(90 + 18 * kinds.len() as u32);
    let svg = svg("icicle", height, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(24)
            .y_label_area_size(0)
            // Right of the total stays free for the legend.
            .build_cartesian_2d(0f64..total * 1.22, 0f64..rows as f64)
            .map_err(b)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .disable_y_axis()
            .x_labels(6)
            .x_label_formatter(&|v| {
                if *v <= total {
                    duration(*v)
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(b)?;
        let y = |d: usize| (rows - 1 - d) as f64;
        for (k, kind) in kinds.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            chart
                .draw_series(cells.iter().filter(|c| c.4 == k).map(|c| {
                    Rectangle::new(
                        [(c.0, y(c.2) + 0.04), (c.1, y(c.2) + 0.96)],
                        color.mix(0.75).filled(),
                    )
                }))
                .map_err(b)?
                .label(*kind)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        // A name where its cell is wide enough for some of it (7 px a character).
        let px = (WIDTH - 20) as f64 / (total * 1.22);
        chart
            .draw_series(cells.iter().filter_map(|c| {
                let chars = ((c.1 - c.0) * px / 7.0) as usize;
                (chars >= 4).then(|| {
                    let name = match c.3.threads {
                        1 => c.3.name.clone(),
                        t => format!("{} ({t} thr)", c.3.name),
                    };
                    Text::new(
                        label(&name, chars),
                        (c.0 + 2.0 / px, y(c.2) + 0.7),
                        ("sans-serif", 11).into_font(),
                    )
                })
            }))
            .map_err(b)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(b)?;
        Ok(())
    })?;
    Ok(Figure {
        id: "icicle",
        title: "Call-path tree (icicle)".into(),
        note,
        svg,
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
    let height = 80 + (24 * nr as u32).min(600);
    let svg = svg(title, height, |root| {
        // Segmented axes: a label at the centre of every cell's row and column
        // (plain numeric axes put them at round values, between cells).
        let mut chart = ChartBuilder::on(root)
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
        chart
            .draw_series(values.iter().enumerate().flat_map(|(r, row)| {
                row.iter()
                    .enumerate()
                    .filter(|(_, v)| **v > 0.0)
                    .map(move |(c, v)| {
                        let (colour, t) = shade(r, c, *v);
                        let y = nr - 1 - r;
                        Rectangle::new(
                            [
                                (SegmentValue::Exact(c), SegmentValue::Exact(y)),
                                (SegmentValue::Exact(c + 1), SegmentValue::Exact(y + 1)),
                            ],
                            colour.mix(t).filled(),
                        )
                    })
            }))
            .map_err(b)?;
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
    })
}

/// Instance durations over time: per series (a call path) its (start, duration)
/// samples as points, start in ns since the run began.
pub fn scatter(
    note: String,
    series: &[(String, Vec<(f64, f64)>)],
    run_ns: f64,
) -> Result<Figure, Failure> {
    let max = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        .max(1.0);
    let svg = svg("scatter", 420, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..run_ns.max(1.0), 0f64..max * 1.1)
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
        for (i, (name, points)) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|p| Circle::new(*p, 2, color.mix(0.7).filled())),
                )
                .map_err(b)?
                .label(label(name, 64))
                .legend(move |(x, y)| Circle::new((x + 5, y), 4, color.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(b)?;
        Ok(())
    })?;
    Ok(Figure {
        id: "scatter",
        title: "Instance durations over time".into(),
        note,
        svg,
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
    let svg = svg(title, 380, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..run_ns.max(1.0), 0f64..max * 1.3)
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
        for (c, (name, _)) in series.iter().enumerate().rev() {
            let color = PALETTE[c % PALETTE.len()];
            chart
                .draw_series(AreaSeries::new(
                    steps(&sums[c], bucket_ns, run_ns),
                    0.0,
                    color.filled(),
                ))
                .map_err(b)?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(b)?;
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
    })
}

/// Series over time as step lines, one polyline each; `fmt` writes a value.
pub fn lines_over_time(
    id: &'static str,
    title: &str,
    note: String,
    series: &[(String, Vec<f64>)],
    bucket_ns: f64,
    run_ns: f64,
    fmt: fn(f64) -> String,
) -> Result<Figure, Failure> {
    let max = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .fold(0.0, f64::max)
        .max(1.0);
    let svg = svg(title, 380, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..run_ns.max(1.0), 0f64..max * 1.2)
            .map_err(b)?;
        chart
            .configure_mesh()
            .x_labels(8)
            .y_labels(6)
            .x_label_formatter(&|v| duration(*v))
            .y_label_formatter(&|v| fmt(*v))
            .x_desc("time since start")
            .draw()
            .map_err(b)?;
        for (c, (name, values)) in series.iter().enumerate() {
            let color = PALETTE[c % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(
                    steps(values, bucket_ns, run_ns),
                    color.stroke_width(2),
                ))
                .map_err(b)?
                .label(label(name, 60))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(b)?;
        Ok(())
    })?;
    Ok(Figure {
        id,
        title: title.into(),
        note,
        svg,
    })
}

/// Bytes for axis labels.
pub fn fmt_bytes(v: f64) -> String {
    bytes(v.max(0.0) as u64)
}
