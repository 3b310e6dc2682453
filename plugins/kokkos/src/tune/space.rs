//! Tuning variables as declared to the tool (type, candidate values) and the
//! lattice axis each output variable becomes for the search.

use std::fmt;

/// A value of a tuning variable.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `kokkos_value_int64`.
    Int(i64),
    /// `kokkos_value_double`.
    Double(f64),
    /// `kokkos_value_string` (at most 63 bytes reach Kokkos).
    Text(String),
}

impl Value {
    /// The number, for numeric values.
    pub fn number(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Double(d) => Some(*d),
            Value::Text(_) => None,
        }
    }

    /// As JSON (a number or a string).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Double(d) => serde_json::Number::from_f64(*d)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Text(s) => serde_json::Value::from(s.as_str()),
        }
    }

    /// From JSON written by [`Value::to_json`], typed as `ty` says.
    pub fn from_json(v: &serde_json::Value, ty: ValueType) -> Option<Value> {
        match ty {
            ValueType::Int => v.as_i64().map(Value::Int),
            ValueType::Double => v.as_f64().map(Value::Double),
            ValueType::Text => v.as_str().map(|s| Value::Text(s.to_string())),
        }
    }

    /// Whether two values are the same candidate (doubles within rounding).
    pub fn same(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Double(a), Value::Double(b)) => close(*a, *b),
            _ => self == other,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Double(d) => write!(f, "{d}"),
            Value::Text(s) => write!(f, "{s}"),
        }
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// `Kokkos_Tools_VariableInfo_ValueType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// 0.
    Double,
    /// 1.
    Int,
    /// 2.
    Text,
}

impl ValueType {
    /// From the C enum; `None` for values the interface does not define.
    pub fn from_c(v: u32) -> Option<ValueType> {
        match v {
            0 => Some(ValueType::Double),
            1 => Some(ValueType::Int),
            2 => Some(ValueType::Text),
            _ => None,
        }
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Double => "double",
            ValueType::Int => "int64",
            ValueType::Text => "string",
        }
    }

    fn make(self, x: f64) -> Value {
        match self {
            ValueType::Int => Value::Int(x.round() as i64),
            _ => Value::Double(x),
        }
    }
}

/// The values a variable may take.
#[derive(Debug, Clone, PartialEq)]
pub enum Candidates {
    /// A discrete set.
    Set(Vec<Value>),
    /// From `lower` to `upper` by `step` (0: any value between); an open bound
    /// is excluded.
    Range {
        /// Lower bound.
        lower: f64,
        /// Upper bound.
        upper: f64,
        /// Step, 0 for continuous.
        step: f64,
        /// `lower` excluded.
        open_lower: bool,
        /// `upper` excluded.
        open_upper: bool,
    },
    /// Any value.
    Unbounded,
}

/// A declared tuning variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: ValueType,
    /// `Kokkos_Tools_VariableInfo_StatisticalCategory` (categorical 0, ordinal 1,
    /// interval 2, ratio 3).
    pub category: u32,
    /// What it may take.
    pub candidates: Candidates,
}

/// Stepped ranges of more points than this are searched as continuous ones.
const MAX_POINTS: usize = 1024;
/// Points of the lattice of a continuous range.
const CONTINUOUS_POINTS: usize = 1001;

/// One output variable as an axis of the search lattice.
#[derive(Debug, Clone, PartialEq)]
pub enum Axis {
    /// These values, in order.
    Points(Vec<Value>),
    /// [`CONTINUOUS_POINTS`] points from `lo` to `hi` (open ends moved inside),
    /// snapped to `step` when it is not 0.
    Continuous {
        /// First point.
        lo: f64,
        /// Last point.
        hi: f64,
        /// Step to snap to (0: none).
        step: f64,
        /// Type of the values.
        ty: ValueType,
    },
    /// Not searched: the default is kept (an unbounded or empty declaration).
    Fixed,
}

impl Variable {
    /// The lattice axis of this variable as an output.
    pub fn axis(&self) -> Axis {
        match &self.candidates {
            Candidates::Set(v) if !v.is_empty() => Axis::Points(v.clone()),
            Candidates::Set(_) | Candidates::Unbounded => Axis::Fixed,
            &Candidates::Range {
                lower,
                upper,
                step,
                open_lower,
                open_upper,
            } => {
                if !(lower.is_finite() && upper.is_finite() && step.is_finite())
                    || upper < lower
                    || step < 0.0
                    || self.ty == ValueType::Text
                {
                    return Axis::Fixed;
                }
                // An integer range is stepped, at least by 1.
                let step = if self.ty == ValueType::Int {
                    step.round().max(1.0)
                } else {
                    step
                };
                if step > 0.0 {
                    let n = ((upper - lower) / step + 1e-9).floor();
                    if n < MAX_POINTS as f64 {
                        let points: Vec<Value> = (0..=n as usize)
                            .map(|k| lower + k as f64 * step)
                            .filter(|&x| {
                                !(open_lower && close(x, lower) || open_upper && close(x, upper))
                            })
                            .map(|x| self.ty.make(x))
                            .collect();
                        return if points.is_empty() {
                            Axis::Fixed
                        } else {
                            Axis::Points(points)
                        };
                    }
                }
                let inset = if step > 0.0 {
                    step
                } else {
                    (upper - lower) / (2 * CONTINUOUS_POINTS) as f64
                };
                let lo = if open_lower { lower + inset } else { lower };
                let hi = if open_upper { upper - inset } else { upper };
                if hi < lo {
                    return Axis::Fixed;
                }
                Axis::Continuous {
                    lo,
                    hi,
                    step,
                    ty: self.ty,
                }
            }
        }
    }
}

/// Where a program's default lies on an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// On the axis.
    Inside,
    /// On an open bound (excluded by the declaration, as Kokkos' own tuners pass
    /// it): moved to the nearest point, not an anomaly.
    OnOpenBound,
    /// Outside the declared values: moved to the nearest point (the first, for
    /// strings), counted as an anomaly.
    Outside,
}

impl Axis {
    /// Points on this axis.
    pub fn size(&self) -> usize {
        match self {
            Axis::Points(v) => v.len(),
            Axis::Continuous { .. } => CONTINUOUS_POINTS,
            Axis::Fixed => 1,
        }
    }

    /// The value at point `i`; `default` for a fixed axis.
    pub fn value(&self, i: usize, default: &Value) -> Value {
        match self {
            Axis::Points(v) => v.get(i).cloned().unwrap_or_else(|| default.clone()),
            &Axis::Continuous { lo, hi, step, ty } => {
                let t = i.min(CONTINUOUS_POINTS - 1) as f64 / (CONTINUOUS_POINTS - 1) as f64;
                let mut x = lo + t * (hi - lo);
                if step > 0.0 {
                    x = lo + ((x - lo) / step).round() * step;
                    if x > hi {
                        x -= step;
                    }
                }
                ty.make(x.clamp(lo, hi))
            }
            Axis::Fixed => default.clone(),
        }
    }

    /// The point of `value` (or the nearest), and whether it was on the axis.
    pub fn place(&self, value: &Value, declared: &Candidates) -> (usize, Placement) {
        let on_open_bound = |x: f64| match *declared {
            Candidates::Range {
                lower,
                upper,
                open_lower,
                open_upper,
                ..
            } => open_lower && close(x, lower) || open_upper && close(x, upper),
            _ => false,
        };
        match self {
            Axis::Fixed => (0, Placement::Inside),
            Axis::Points(points) => {
                if let Some(i) = points.iter().position(|p| p.same(value)) {
                    return (i, Placement::Inside);
                }
                let Some(x) = value.number() else {
                    return (0, Placement::Outside);
                };
                let nearest = points
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| p.number().map(|y| (i, (y - x).abs())))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map_or(0, |(i, _)| i);
                let how = if on_open_bound(x) {
                    Placement::OnOpenBound
                } else {
                    Placement::Outside
                };
                (nearest, how)
            }
            &Axis::Continuous { lo, hi, .. } => {
                let Some(x) = value.number() else {
                    return (0, Placement::Outside);
                };
                let how = if on_open_bound(x) {
                    Placement::OnOpenBound
                } else if x < lo || x > hi || !x.is_finite() {
                    Placement::Outside
                } else {
                    Placement::Inside
                };
                let t = if hi > lo { (x - lo) / (hi - lo) } else { 0.0 };
                let t = if t.is_finite() {
                    t.clamp(0.0, 1.0)
                } else {
                    0.0
                };
                ((t * (CONTINUOUS_POINTS - 1) as f64).round() as usize, how)
            }
        }
    }
}

/// How a declaration's candidates read in reports.
pub fn describe(c: &Candidates) -> serde_json::Value {
    match c {
        Candidates::Set(v) => {
            serde_json::json!({ "set": v.iter().map(Value::to_json).collect::<Vec<_>>() })
        }
        Candidates::Range {
            lower,
            upper,
            step,
            open_lower,
            open_upper,
        } => serde_json::json!({ "range": {
            "lower": lower, "upper": upper, "step": step,
            "open_lower": open_lower, "open_upper": open_upper,
        }}),
        Candidates::Unbounded => serde_json::json!("unbounded"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(ty: ValueType, candidates: Candidates) -> Variable {
        Variable {
            name: "v".into(),
            ty,
            category: 1,
            candidates,
        }
    }

    #[test]
    fn sets_are_points() {
        let v = var(
            ValueType::Int,
            Candidates::Set(vec![Value::Int(32), Value::Int(64), Value::Int(128)]),
        );
        let a = v.axis();
        assert_eq!(a.size(), 3);
        assert_eq!(
            a.place(&Value::Int(128), &v.candidates),
            (2, Placement::Inside)
        );
        assert_eq!(
            a.place(&Value::Int(100), &v.candidates),
            (2, Placement::Outside)
        );
        let s = var(
            ValueType::Text,
            Candidates::Set(vec![Value::Text("a".into()), Value::Text("b".into())]),
        );
        assert_eq!(
            s.axis().place(&Value::Text("zz".into()), &s.candidates),
            (0, Placement::Outside)
        );
    }

    #[test]
    fn open_stepped_range_of_kokkos_team_tuner() {
        // Kokkos 3.4's team-size tuner: [0, 0.999] by 0.999/20, both ends open.
        let c = Candidates::Range {
            lower: 0.0,
            upper: 0.999,
            step: 0.999 / 20.0,
            open_lower: true,
            open_upper: true,
        };
        let v = var(ValueType::Double, c.clone());
        let a = v.axis();
        assert_eq!(a.size(), 19);
        let first = a.value(0, &Value::Double(0.0)).number().unwrap();
        assert!(first > 0.0 && first < 0.06);
        let last = a.value(18, &Value::Double(0.0)).number().unwrap();
        assert!(last < 0.999);
        assert_eq!(
            a.place(&Value::Double(0.0), &c),
            (0, Placement::OnOpenBound)
        );
        assert_eq!(a.place(&Value::Double(-1.0), &c).1, Placement::Outside);
    }

    #[test]
    fn large_and_continuous_ranges() {
        let big = var(
            ValueType::Int,
            Candidates::Range {
                lower: 1.0,
                upper: 1e6,
                step: 1.0,
                open_lower: false,
                open_upper: false,
            },
        );
        let a = big.axis();
        assert_eq!(a.size(), CONTINUOUS_POINTS);
        assert_eq!(a.value(0, &Value::Int(0)), Value::Int(1));
        assert_eq!(a.value(1000, &Value::Int(0)), Value::Int(1_000_000));
        let cont = var(
            ValueType::Double,
            Candidates::Range {
                lower: 0.0,
                upper: 1.0,
                step: 0.0,
                open_lower: false,
                open_upper: false,
            },
        );
        let a = cont.axis();
        assert_eq!(a.value(500, &Value::Double(0.0)), Value::Double(0.5));
        assert_eq!(
            a.place(&Value::Double(0.25), &cont.candidates),
            (250, Placement::Inside)
        );
        assert_eq!(
            var(ValueType::Int, Candidates::Unbounded).axis(),
            Axis::Fixed
        );
    }
}
