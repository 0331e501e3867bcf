//! Numbers as the reports and descriptions write them: thousands separated (`15,000`), no
//! needless decimals (`0.65`, `5`).

/// A number with at most three decimals, trailing zeros cut (`0.15`, `1`, `0.65`).
pub fn trimmed(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" || s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// A whole number with thousands separators (`15,000`); anything else as [`trimmed`].
pub fn thousands(v: f64) -> String {
    if v.fract() != 0.0 || v.abs() >= 1e15 {
        return trimmed(v);
    }
    let digits = format!("{}", v.abs() as u64);
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if v < 0.0 {
        out.push('-');
    }
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_plainly() {
        assert_eq!(
            (thousands(15_000.0), thousands(999.0), thousands(1e6), thousands(-1234.0)),
            ("15,000".into(), "999".into(), "1,000,000".into(), "-1,234".into())
        );
        assert_eq!(
            (thousands(0.65), trimmed(0.15), trimmed(5.0), trimmed(0.0004)),
            ("0.65".into(), "0.15".into(), "5".into(), "0".into())
        );
    }
}
