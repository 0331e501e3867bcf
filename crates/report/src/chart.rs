//! A small SVG line chart: time on x, lines of points and shaded bands, a linear or log y axis
//! chosen for the data ([`YAxis::for_values`]), faults drawn so that they never hide the data
//! ([`Mark`]), phase shading. Deterministic text output (fixed decimals).

use std::fmt::Write as _;

/// One line.
#[derive(Clone, Debug)]
pub struct Line {
    /// Legend text and tooltip.
    pub label: String,
    /// CSS colour.
    pub color: String,
    /// Stroke width, px.
    pub width: f64,
    /// SVG dash pattern (`None`: solid).
    pub dash: Option<&'static str>,
    /// Text written in the chart beside the line's highest point (a node picked out of many,
    /// `node 17`; a policy at the end of its running total).
    pub tag: Option<String>,
    /// y value per x = 0, 1, 2, ... (None = gap).
    pub values: Vec<Option<f64>>,
}

impl Line {
    /// A solid line of the usual width, untagged.
    pub fn plain(label: String, color: &str, values: Vec<Option<f64>>) -> Line {
        Line {
            label,
            color: color.to_string(),
            width: 1.2,
            dash: None,
            tag: None,
            values,
        }
    }
}

/// A shaded band between two series (the spread of many nodes).
#[derive(Clone, Debug)]
pub struct Band {
    /// What it spans (its tooltip).
    pub label: String,
    /// CSS fill colour.
    pub color: String,
    /// Lower edge per x.
    pub lower: Vec<Option<f64>>,
    /// Upper edge per x.
    pub upper: Vec<Option<f64>>,
}

/// A fault starting or ending.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    /// When (x).
    pub x: f64,
    /// Its kind (`down`, `up`, `paused`, ...): marks are grouped by it.
    pub kind: String,
    /// The whole label (`node 2 down`), its tooltip.
    pub label: String,
}

/// A y axis: its range, linear or logarithmic, and where off-scale values are drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct YAxis {
    /// Bottom of the axis (0 for a linear one, a power of ten for a log one).
    pub min: f64,
    /// Top of the axis.
    pub max: f64,
    /// Logarithmic.
    pub log: bool,
    /// What values above `max` are, when some are: they are drawn on the top edge and the
    /// chart says so (`time-out, 5,000 ms`).
    pub off_scale: Option<String>,
}

impl YAxis {
    /// A linear axis from 0 to a nice maximum at or above `max`.
    pub fn linear(max: f64) -> YAxis {
        YAxis {
            min: 0.0,
            max: nice_max(max),
            log: false,
            off_scale: None,
        }
    }

    /// The axis for latencies `values`: values at or above `ceiling` (the time-out: a second
    /// whose figure is a failed request) are off the scale, drawn on its top edge and named
    /// `ceiling_label`; the others set the range. Linear from 0 where they span less than a
    /// decade (the effect of a cold restart, 40 -> 47 ms, stays visible), log from the power
    /// of ten below the lowest where they span more.
    pub fn for_values(values: impl Iterator<Item = f64>, ceiling: Option<f64>, ceiling_label: &str) -> YAxis {
        let ceiling = ceiling.unwrap_or(f64::INFINITY);
        let (mut lo, mut hi, mut clipped) = (f64::INFINITY, 0.0f64, false);
        for v in values.filter(|v| v.is_finite() && *v > 0.0) {
            if v >= ceiling {
                clipped = true;
            } else {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        let off_scale = clipped.then(|| ceiling_label.to_string());
        if hi <= 0.0 {
            // Only failures (or nothing): the ceiling is the scale.
            let max = if clipped { ceiling } else { 1.0 };
            return YAxis {
                off_scale: None,
                ..YAxis::linear(max)
            };
        }
        if hi < lo * 10.0 {
            return YAxis {
                off_scale,
                ..YAxis::linear(hi)
            };
        }
        YAxis {
            min: 10f64.powf(lo.log10().floor()),
            max: nice_max(hi),
            log: true,
            off_scale,
        }
    }
}

/// A chart to draw.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Title above it.
    pub title: String,
    /// Colour of the title (the policy a per-node chart shows, in its colour).
    pub title_color: Option<String>,
    /// x range end (seconds).
    pub x_max: f64,
    /// The y axis.
    pub y: YAxis,
    /// The lines, drawn in order (the first one lowest).
    pub lines: Vec<Line>,
    /// Shaded bands, drawn under the lines.
    pub bands: Vec<Band>,
    /// Faults: up to [`MAX_MARK_LINES`] are dashed lines labelled at the top with their kind
    /// ("down", "up", as in the HWLB blog's panels); more are a rug per kind under the plot.
    pub marks: Vec<Mark>,
    /// Shaded spans: (from, to, label).
    pub spans: Vec<(f64, f64, String)>,
    /// Width and height in pixels of the plot's box ([`SMALL`] or [`WIDE`]); rugs add rows.
    pub size: (f64, f64),
}

/// A small multiple: one of many side by side.
pub const SMALL: (f64, f64) = (380.0, 190.0);
/// A chart of its own, one line per policy.
pub const WIDE: (f64, f64) = (780.0, 260.0);
/// Up to this many fault marks are drawn as labelled lines across the plot; more become a rug
/// per kind below it, so that a rolling restart's 200 marks never hide the data.
pub const MAX_MARK_LINES: usize = 4;

const LEFT: f64 = 46.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 22.0;
/// Height of one rug row, px.
const RUG_ROW: f64 = 9.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" axis maximum at or above `v` (1, 1.2, 1.6, 2, 2.5, 3, 4, 5, 6, 8 x 10^k: close
/// enough above the data that its changes fill the chart, and with short quarter ticks).
pub fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let exp = 10f64.powf(v.log10().floor());
    for m in [1.0, 1.2, 1.6, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * exp >= v * 0.999_999 {
            return m * exp;
        }
    }
    10.0 * exp
}

/// A tick's value with the fewest decimals that write it exactly (`62.5`, `1.25`, `0.001`),
/// thousands as `k` (`1.5k`).
fn fmt_tick(v: f64) -> String {
    let (v, suffix) = if v >= 1000.0 { (v / 1000.0, "k") } else { (v, "") };
    let decimals = (0..6).find(|&d| {
        let scale = 10f64.powi(d);
        ((v * scale).round() - v * scale).abs() < 1e-6 * scale.max(1.0)
    });
    let decimals = decimals.unwrap_or(6) as usize;
    format!("{v:.decimals$}{suffix}")
}

impl Chart {
    fn plot_bottom(&self) -> f64 {
        self.size.1 - BOTTOM
    }

    fn y_of(&self, v: f64) -> f64 {
        let plot_h = self.plot_bottom() - TOP;
        let frac = if self.y.log {
            let (a, b) = (self.y.min.log10(), self.y.max.max(self.y.min * 10.0).log10());
            ((v.max(self.y.min)).log10() - a) / (b - a)
        } else {
            (v - self.y.min) / (self.y.max - self.y.min).max(1e-12)
        };
        TOP + plot_h * (1.0 - frac.clamp(0.0, 1.0))
    }

    fn x_of(&self, x: f64) -> f64 {
        LEFT + (self.size.0 - LEFT - RIGHT) * (x / self.x_max.max(1e-9)).clamp(0.0, 1.0)
    }

    /// The kinds of the marks, in order of first appearance, with their marks' x.
    fn mark_kinds(&self) -> Vec<(&str, Vec<f64>)> {
        let mut kinds: Vec<(&str, Vec<f64>)> = Vec::new();
        for m in &self.marks {
            match kinds.iter_mut().find(|(k, _)| *k == m.kind) {
                Some((_, xs)) => xs.push(m.x),
                None => kinds.push((&m.kind, vec![m.x])),
            }
        }
        kinds
    }

    /// Rug rows under the plot: one per mark kind when there are too many marks for lines.
    fn rug_rows(&self) -> usize {
        if self.marks.len() > MAX_MARK_LINES {
            self.mark_kinds().len()
        } else {
            0
        }
    }

    /// The chart's full height: its box plus the rug rows.
    pub fn height(&self) -> f64 {
        self.size.1 + RUG_ROW * self.rug_rows() as f64
    }

    /// The chart as an `<svg>` element.
    pub fn svg(&self) -> String {
        assert!(
            self.size.0 > LEFT + RIGHT && self.size.1 > TOP + BOTTOM,
            "a chart of {:?} has no room to plot",
            self.size
        );
        assert!(
            self.y.max.is_finite() && self.y.min.is_finite() && (!self.y.log || self.y.min > 0.0),
            "the y axis {}..{} (log {}) cannot place a value",
            self.y.min,
            self.y.max,
            self.y.log
        );
        let w = self.size.0;
        let h = self.height();
        let bottom = self.plot_bottom();
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" class="chart">"#
        );
        let fill = self
            .title_color
            .as_deref()
            .map_or(String::new(), |c| format!(r#" style="fill:{c}""#));
        let _ = write!(s, r#"<text x="{LEFT}" y="13" class="title"{fill}>{}</text>"#, esc(&self.title));
        for (from, to, label) in &self.spans {
            let (x0, x1) = (self.x_of(*from), self.x_of(*to));
            let _ = write!(
                s,
                r#"<rect x="{x0:.1}" y="{TOP}" width="{:.1}" height="{:.1}" class="span"><title>{}</title></rect>"#,
                (x1 - x0).max(0.0),
                bottom - TOP,
                esc(label)
            );
        }
        self.axes(&mut s);
        self.mark_lines(&mut s);
        for band in &self.bands {
            self.band(&mut s, band);
        }
        for line in &self.lines {
            self.line(&mut s, line);
        }
        self.tags(&mut s);
        if let Some(what) = &self.y.off_scale {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" class="note" text-anchor="end">&#9650; on the top edge: {}</text>"#,
                w - RIGHT - 3.0,
                TOP + 10.0,
                esc(what)
            );
        }
        let _ = write!(
            s,
            r#"<rect x="{LEFT}" y="{TOP}" width="{:.1}" height="{:.1}" class="frame"/>"#,
            w - LEFT - RIGHT,
            bottom - TOP
        );
        self.rugs(&mut s);
        s.push_str("</svg>");
        s
    }

    fn axes(&self, s: &mut String) {
        let (w, h) = (self.size.0, self.height());
        let ticks: Vec<f64> = if self.y.log {
            let mut t = Vec::new();
            let mut v = self.y.min;
            while v <= self.y.max * 1.0001 {
                t.push(v);
                v *= 10.0;
            }
            t
        } else {
            (0..=4).map(|i| self.y.min + (self.y.max - self.y.min) * i as f64 / 4.0).collect()
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
            // The last label ends at the plot's right edge rather than past the picture's.
            let anchor = if i == 4 { "end" } else { "middle" };
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="{anchor}">{:.0}s</text>"#,
                self.x_of(x),
                h - 6.0,
                x
            );
        }
    }

    /// A few marks: a dashed line each across the plot, its kind written at the top ("down",
    /// "up"), the whole label as its tooltip. A label goes right of its line, or left when the
    /// next mark is too close for it (a restart's "down" and "up" 30 s apart on a small chart).
    fn mark_lines(&self, s: &mut String) {
        if self.marks.len() > MAX_MARK_LINES {
            return;
        }
        let xs: Vec<f64> = self.marks.iter().map(|m| self.x_of(m.x)).collect();
        for (i, m) in self.marks.iter().enumerate() {
            let px = xs[i];
            let width = 5.0 * m.kind.chars().count() as f64 + 4.0;
            let crowded = xs.iter().any(|&x| x > px && x - px < width);
            let (tx, anchor) = if crowded { (px - 2.0, "end") } else { (px + 2.0, "start") };
            let _ = write!(
                s,
                r#"<line x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{:.1}" class="marker"><title>{}</title></line><text x="{tx:.1}" y="{:.1}" class="mark" text-anchor="{anchor}">{}</text>"#,
                self.plot_bottom(),
                esc(&m.label),
                TOP + 9.0,
                esc(&m.kind)
            );
        }
    }

    /// Many marks: a row of ticks per kind under the plot, named on the left (`down x100`).
    fn rugs(&self, s: &mut String) {
        if self.marks.len() <= MAX_MARK_LINES {
            return;
        }
        for (row, (kind, xs)) in self.mark_kinds().iter().enumerate() {
            let y0 = self.plot_bottom() + 2.0 + RUG_ROW * row as f64;
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" class="rug-label" text-anchor="end">{}</text><path d=""#,
                LEFT - 3.0,
                y0 + 7.0,
                esc(kind)
            );
            for x in xs {
                let _ = write!(s, "M{:.1},{y0:.1}v7", self.x_of(*x));
            }
            let _ = write!(s, r#"" class="rug"><title>{} times: {kind}</title></path>"#, xs.len());
        }
    }

    fn band(&self, s: &mut String, band: &Band) {
        // One polygon per run of seconds where both edges exist.
        let mut run: Vec<(f64, f64, f64)> = Vec::new();
        let flush = |s: &mut String, run: &mut Vec<(f64, f64, f64)>| {
            if run.len() > 1 {
                let mut d = String::new();
                for (i, (x, _, hi)) in run.iter().enumerate() {
                    let _ = write!(d, "{}{x:.1},{hi:.1}", if i == 0 { "M" } else { " L" });
                }
                for (x, lo, _) in run.iter().rev() {
                    let _ = write!(d, " L{x:.1},{lo:.1}");
                }
                let _ = write!(
                    s,
                    r#"<path d="{d} Z" fill="{}" stroke="none"><title>{}</title></path>"#,
                    band.color,
                    esc(&band.label)
                );
            }
            run.clear();
        };
        for (i, (lo, hi)) in band.lower.iter().zip(&band.upper).enumerate() {
            match (lo, hi) {
                (Some(lo), Some(hi)) if lo.is_finite() && hi.is_finite() => {
                    run.push((self.x_of(i as f64 + 0.5), self.y_of(*lo), self.y_of(*hi)));
                }
                _ => flush(s, &mut run),
            }
        }
        flush(s, &mut run);
    }

    fn line(&self, s: &mut String, line: &Line) {
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
        let dash = line.dash.map_or(String::new(), |d| format!(r#" stroke-dasharray="{d}""#));
        let _ = write!(
            s,
            r#"<path d="{}" fill="none" stroke="{}" stroke-width="{}"{dash}><title>{}</title></path>"#,
            d.trim(),
            line.color,
            line.width,
            esc(&line.label)
        );
    }

    /// Each tagged line's text beside its highest point (the latest if it stays there: the end
    /// of a running total), kept inside the plot and moved down (or up) until it overlaps no
    /// other tag.
    fn tags(&self, s: &mut String) {
        const ROW: f64 = 10.0;
        let bottom = self.plot_bottom() - 2.0;
        // Placed tags: (left, right, baseline).
        let mut placed: Vec<(f64, f64, f64)> = Vec::new();
        for line in &self.lines {
            let Some(text) = &line.tag else {
                continue;
            };
            let top = line
                .values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.filter(|v| v.is_finite()).map(|v| (i, v)))
                .fold(None::<(usize, f64)>, |best, (i, v)| match best {
                    Some((_, b)) if b > v => best,
                    _ => Some((i, v)),
                });
            let Some((i, v)) = top else {
                continue;
            };
            let x = self.x_of(i as f64 + 0.5);
            let width = 5.6 * text.chars().count() as f64;
            let right_half = x > (LEFT + self.size.0 - RIGHT) / 2.0;
            let (x, anchor, left) = if right_half {
                (x - 3.0, "end", x - 3.0 - width)
            } else {
                (x + 3.0, "start", x + 3.0)
            };
            let free = |y: f64, placed: &[(f64, f64, f64)]| {
                placed
                    .iter()
                    .all(|&(l, r, py)| r < left || l > left + width || (py - y).abs() >= ROW)
            };
            let want = (self.y_of(v) - 3.0).clamp(TOP + 8.0, bottom);
            let mut y = want;
            while !free(y, &placed) && y + ROW <= bottom {
                y += ROW;
            }
            if !free(y, &placed) {
                y = want;
                while !free(y, &placed) && y - ROW >= TOP + 8.0 {
                    y -= ROW;
                }
            }
            placed.push((left, left + width, y));
            let _ = write!(
                s,
                r#"<text x="{x:.1}" y="{y:.1}" class="tag" text-anchor="{anchor}" style="fill:{}"><title>{}</title>{}</text>"#,
                line.color,
                esc(&line.label),
                esc(text)
            );
        }
    }

    /// The chart as an SVG file of its own (for a README or a paper): the report's chart style
    /// inlined, a white background, and a legend under the plot naming each line's colour.
    pub fn standalone_svg(&self) -> String {
        let (w, h) = (self.size.0, self.height());
        // The legend: entries left to right, wrapped at the chart's width (text ~5.5 px a char).
        let mut legend = String::new();
        let (mut x, mut row) = (LEFT, 0usize);
        let entries = self
            .bands
            .iter()
            .map(|b| (&b.label, &b.color))
            .chain(self.lines.iter().map(|l| (&l.label, &l.color)));
        for (label, color) in entries {
            let width = 16.0 + 5.5 * label.chars().count() as f64 + 12.0;
            if x + width > w - RIGHT && x > LEFT {
                x = LEFT;
                row += 1;
            }
            let y = h + 4.0 + LEGEND_ROW * row as f64;
            let _ = write!(
                legend,
                r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}" class="tick">{}</text>"#,
                y,
                color,
                x + 14.0,
                y + 9.0,
                esc(label)
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

/// The charts' style, shared by the report's page and the standalone files.
pub(crate) const CHART_CSS: &str = ".chart text{font-family:system-ui,sans-serif}.chart .title{font-size:11px;fill:#333;font-weight:600}.chart .tick{font-size:9px;fill:#666}.chart .grid{stroke:#eee}\
.chart .frame{fill:none;stroke:#999}.chart .marker{stroke:#555;stroke-dasharray:3,3}.chart .mark{font-size:9px;fill:#333}.chart .span{fill:#f4f0ff}\
.chart .rug{stroke:#555;stroke-width:1}.chart .rug-label{font-size:8px;fill:#555}.chart .note{font-size:9px;fill:#a00}.chart .tag{font-size:9px;font-weight:600}";

/// The report's chart style, for a chart outside the report's page.
const STANDALONE_CSS: &str = CHART_CSS;

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(marks: usize) -> Chart {
        Chart {
            title: "a<b".into(),
            title_color: None,
            x_max: 10.0,
            y: YAxis::linear(1.0),
            lines: vec![Line::plain("n0".into(), "#000", vec![Some(0.5), None, Some(1.0)])],
            bands: vec![],
            marks: (0..marks)
                .map(|i| Mark {
                    x: i as f64,
                    kind: if i % 2 == 0 { "down" } else { "up" }.into(),
                    label: format!("node {i} x"),
                })
                .collect(),
            spans: vec![],
            size: SMALL,
        }
    }

    #[test]
    fn nice_maxima() {
        assert_eq!(nice_max(0.83), 1.0);
        assert_eq!(nice_max(130.0), 160.0);
        assert_eq!(nice_max(2400.0), 2500.0);
        assert_eq!(nice_max(47.0), 50.0);
        assert_eq!(nice_max(0.0), 1.0);
    }

    #[test]
    fn ticks_keep_their_half_thousands() {
        assert_eq!(
            (fmt_tick(1500.0), fmt_tick(2000.0), fmt_tick(2.5), fmt_tick(0.25), fmt_tick(0.001)),
            ("1.5k".into(), "2k".into(), "2.5".into(), "0.25".into(), "0.001".into())
        );
        assert_eq!(
            (fmt_tick(62.5), fmt_tick(187.5), fmt_tick(0.0), fmt_tick(0.1), fmt_tick(1250.0)),
            ("62.5".into(), "187.5".into(), "0".into(), "0.1".into(), "1.25k".into())
        );
    }

    #[test]
    fn svg_is_well_formed_enough() {
        let c = chart(1);
        let s = c.svg();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("a&lt;b") && s.contains("d=\"M") && s.matches(" M").count() == 1);
        // The last x label ends at the plot's edge.
        assert!(s.contains(r#"text-anchor="end">10s</text>"#), "{s}");
        let file = c.standalone_svg();
        assert!(file.starts_with("<svg") && file.ends_with("</svg>") && file.matches("<svg").count() == 1);
        assert!(file.contains("<style>") && file.contains(">n0</text>"), "{file}");
    }

    /// A restart's two marks are labelled lines; a rolling restart's are a rug per kind.
    #[test]
    fn few_marks_are_labelled_lines_many_are_rugs() {
        let few = chart(2).svg();
        assert_eq!(few.matches("class=\"marker\"").count(), 2);
        assert!(few.contains(">down</text>") && few.contains(">up</text>") && !few.contains("rug"));
        let many = chart(200);
        let s = many.svg();
        assert_eq!(s.matches("class=\"marker\"").count(), 0);
        assert!(s.contains(">down</text>") && s.contains("<title>100 times: up</title>"), "{s}");
        assert_eq!(many.height(), SMALL.1 + 2.0 * RUG_ROW);
    }

    /// Latencies over less than a decade get a linear axis from 0; over more, a log one from
    /// the power of ten below the lowest; values at the time-out are off the scale.
    #[test]
    fn the_axis_fits_the_values() {
        let narrow = YAxis::for_values([40.0, 47.0, 5000.0].into_iter(), Some(5000.0), "time-out");
        assert_eq!(
            narrow,
            YAxis {
                min: 0.0,
                max: 50.0,
                log: false,
                off_scale: Some("time-out".into())
            }
        );
        let wide = YAxis::for_values([0.6, 12.0].into_iter(), Some(5000.0), "time-out");
        assert_eq!((wide.min, wide.max, wide.log, wide.off_scale), (0.1, 12.0, true, None));
        let failed_only = YAxis::for_values([5000.0].into_iter(), Some(5000.0), "time-out");
        assert_eq!((failed_only.max, failed_only.log), (5000.0, false));
    }
}
