//! A small SVG line chart: time on x, lines of points, optional log y axis, fault markers and
//! phase shading. Deterministic text output (fixed decimals).

use std::fmt::Write as _;

/// One line.
#[derive(Clone, Debug)]
pub struct Line {
    /// Legend text.
    pub label: String,
    /// CSS colour.
    pub color: String,
    /// Wider stroke (the highlighted node).
    pub bold: bool,
    /// y value per x = 0, 1, 2, ... (None = gap).
    pub values: Vec<Option<f64>>,
}

/// A chart to draw.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Title above it.
    pub title: String,
    /// x range end (seconds).
    pub x_max: f64,
    /// y range end (shared across a row).
    pub y_max: f64,
    /// Logarithmic y (latency).
    pub log_y: bool,
    /// The lines.
    pub lines: Vec<Line>,
    /// Vertical markers: (x, label).
    pub markers: Vec<(f64, String)>,
    /// Shaded spans: (from, to, label).
    pub spans: Vec<(f64, f64, String)>,
    /// Width and height in pixels ([`SMALL`] or [`WIDE`]).
    pub size: (f64, f64),
}

/// A small multiple: one of many side by side.
pub const SMALL: (f64, f64) = (380.0, 190.0);
/// A chart of its own, one line per policy.
pub const WIDE: (f64, f64) = (780.0, 260.0);

const LEFT: f64 = 46.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 22.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" axis maximum at or above `v` (1, 2, 2.5, 5 x 10^k).
pub fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let exp = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * exp >= v * 0.999_999 {
            return m * exp;
        }
    }
    10.0 * exp
}

fn fmt_tick(v: f64) -> String {
    if v >= 1000.0 {
        let k = v / 1000.0;
        if (k - k.round()).abs() < 1e-9 {
            format!("{k:.0}k")
        } else {
            format!("{k:.1}k")
        }
    } else if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else if v >= 0.01 {
        format!("{v:.2}")
    } else {
        // A log axis reaches 0.001 and below: as many decimals as its first digit needs.
        let decimals = (-v.log10() - 1e-9).ceil() as usize;
        format!("{v:.decimals$}")
    }
}

impl Chart {
    fn y_of(&self, v: f64) -> f64 {
        let plot_h = self.size.1 - TOP - BOTTOM;
        let frac = if self.log_y {
            let lo = self.y_min_log();
            let (a, b) = (lo.log10(), self.y_max.max(lo * 10.0).log10());
            ((v.max(lo)).log10() - a) / (b - a)
        } else {
            v / self.y_max.max(1e-12)
        };
        TOP + plot_h * (1.0 - frac.clamp(0.0, 1.0))
    }

    fn y_min_log(&self) -> f64 {
        // Two decades of range below the top at most, starting on a power of ten.
        let top = self.y_max.max(1e-3);
        10f64.powf((top.log10() - 3.0).floor())
    }

    fn x_of(&self, x: f64) -> f64 {
        LEFT + (self.size.0 - LEFT - RIGHT) * (x / self.x_max.max(1e-9)).clamp(0.0, 1.0)
    }

    /// The chart as an `<svg>` element.
    pub fn svg(&self) -> String {
        let (w, h) = self.size;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" class="chart">"#
        );
        let _ = write!(s, r#"<text x="{LEFT}" y="13" class="title">{}</text>"#, esc(&self.title));
        for (from, to, label) in &self.spans {
            let (x0, x1) = (self.x_of(*from), self.x_of(*to));
            let _ = write!(
                s,
                r#"<rect x="{x0:.1}" y="{TOP}" width="{:.1}" height="{:.1}" class="span"><title>{}</title></rect>"#,
                (x1 - x0).max(0.0),
                h - TOP - BOTTOM,
                esc(label)
            );
        }
        // Axes and ticks.
        let ticks: Vec<f64> = if self.log_y {
            let lo = self.y_min_log();
            let mut t = Vec::new();
            let mut v = lo;
            while v <= self.y_max * 1.0001 {
                t.push(v);
                v *= 10.0;
            }
            t
        } else {
            (0..=4).map(|i| self.y_max * i as f64 / 4.0).collect()
        };
        for t in ticks {
            let y = self.y_of(t);
            let _ = write!(
                s,
                r#"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" class="grid"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
                w - RIGHT,
                LEFT - 4.0,
                y + 3.0,
                fmt_tick(t)
            );
        }
        for i in 0..=4 {
            let x = self.x_max * i as f64 / 4.0;
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{:.0}s</text>"#,
                self.x_of(x),
                h - 6.0,
                x
            );
        }
        for (x, label) in &self.markers {
            let px = self.x_of(*x);
            let _ = write!(
                s,
                r#"<line x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{:.1}" class="marker"><title>{}</title></line>"#,
                h - BOTTOM,
                esc(label)
            );
        }
        for line in &self.lines {
            let mut d = String::new();
            let mut pen = false;
            for (i, v) in line.values.iter().enumerate() {
                match v {
                    Some(v) if v.is_finite() => {
                        let _ = write!(
                            d,
                            "{}{:.1},{:.1}",
                            if pen { " L" } else { " M" },
                            self.x_of(i as f64 + 0.5),
                            self.y_of(*v)
                        );
                        pen = true;
                    }
                    _ => pen = false,
                }
            }
            let _ = write!(
                s,
                r#"<path d="{}" fill="none" stroke="{}" stroke-width="{}"><title>{}</title></path>"#,
                d.trim(),
                line.color,
                if line.bold { 2.2 } else { 1.1 },
                esc(&line.label)
            );
        }
        let _ = write!(
            s,
            r#"<rect x="{LEFT}" y="{TOP}" width="{:.1}" height="{:.1}" class="frame"/></svg>"#,
            w - LEFT - RIGHT,
            h - TOP - BOTTOM
        );
        s
    }

    /// The chart as an SVG file of its own (for a README or a paper): the report's chart style
    /// inlined, a white background, and a legend under the plot naming each line's colour.
    pub fn standalone_svg(&self) -> String {
        let (w, h) = self.size;
        // The legend: entries left to right, wrapped at the chart's width (text ~5.5 px a char).
        let mut legend = String::new();
        let (mut x, mut row) = (LEFT, 0usize);
        for line in &self.lines {
            let width = 16.0 + 5.5 * line.label.chars().count() as f64 + 12.0;
            if x + width > w - RIGHT && x > LEFT {
                x = LEFT;
                row += 1;
            }
            let y = h + 4.0 + LEGEND_ROW * row as f64;
            let _ = write!(
                legend,
                r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}" class="tick">{}</text>"#,
                y,
                line.color,
                x + 14.0,
                y + 9.0,
                esc(&line.label)
            );
            x += width;
        }
        let total_h = h + 8.0 + LEGEND_ROW * (row + 1) as f64;
        let plot = self.svg();
        let inner = plot
            .split_once('>')
            .map(|(_, rest)| rest.strip_suffix("</svg>").unwrap_or(rest))
            .unwrap_or("");
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{total_h}" viewBox="0 0 {w} {total_h}" class="chart"><style>{STANDALONE_CSS}</style><rect width="{w}" height="{total_h}" fill="white"/>{inner}{legend}</svg>"#
        )
    }
}

/// Height of one legend row in a standalone chart, px.
const LEGEND_ROW: f64 = 16.0;

/// The report's chart style, for a chart outside the report's page.
const STANDALONE_CSS: &str = "text{font-family:system-ui,sans-serif}.title{font-size:11px;fill:#333}.tick{font-size:9px;fill:#666}.grid{stroke:#eee}.frame{fill:none;stroke:#999}.marker{stroke:#555;stroke-dasharray:3,3}.span{fill:#f4f0ff}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_maxima() {
        assert_eq!(nice_max(0.83), 1.0);
        assert_eq!(nice_max(130.0), 200.0);
        assert_eq!(nice_max(2400.0), 2500.0);
        assert_eq!(nice_max(0.0), 1.0);
    }

    #[test]
    fn ticks_keep_their_half_thousands() {
        assert_eq!(
            (fmt_tick(1500.0), fmt_tick(2000.0), fmt_tick(2.5), fmt_tick(0.25), fmt_tick(0.001)),
            ("1.5k".into(), "2k".into(), "2.5".into(), "0.25".into(), "0.001".into())
        );
    }

    #[test]
    fn svg_is_well_formed_enough() {
        let c = Chart {
            title: "a<b".into(),
            x_max: 10.0,
            y_max: 1.0,
            log_y: false,
            lines: vec![Line {
                label: "n0".into(),
                color: "#000".into(),
                bold: false,
                values: vec![Some(0.5), None, Some(1.0)],
            }],
            markers: vec![(5.0, "down".into())],
            spans: vec![],
            size: SMALL,
        };
        let s = c.svg();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("a&lt;b") && s.contains("d=\"M") && s.matches(" M").count() == 1);
        let file = c.standalone_svg();
        assert!(file.starts_with("<svg") && file.ends_with("</svg>") && file.matches("<svg").count() == 1);
        assert!(file.contains("<style>") && file.contains(">n0</text>"), "{file}");
    }
}
