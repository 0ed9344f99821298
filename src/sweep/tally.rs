//! Counting models: how many and how many downloads (a [`Tally`]), shares of a whole (a
//! [`Rate`]), and how every report writes them. The bottom of the sweep: it knows no verdict.
use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub models: usize,
    pub downloads: u64,
}

impl Tally {
    pub(crate) fn add(&mut self, downloads: u64) {
        self.models += 1;
        self.downloads += downloads;
    }
}

/// Percentages (0–100).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Rate {
    pub by_count: f64,
    pub by_downloads: f64,
}

impl Rate {
    pub fn of(part: Tally, whole: Tally) -> Rate {
        let pct = |a: f64, b: f64| if b > 0.0 { 100.0 * a / b } else { 0.0 };
        Rate {
            by_count: pct(part.models as f64, whole.models as f64),
            by_downloads: pct(part.downloads as f64, whole.downloads as f64),
        }
    }
}

pub fn tally(downloads: impl Iterator<Item = u64>) -> Tally {
    let mut t = Tally::default();
    downloads.for_each(|d| t.add(d));
    t
}

/// `1234567` → `1.23M`: downloads at a glance (exact numbers are in JSON/CSV).
pub fn human(n: u64) -> String {
    let f = n as f64;
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", f / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2}M", f / 1e6),
        _ => format!("{:.2}B", f / 1e9),
    }
}

/// `12345` → `12,345`.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1 model`, `2 models`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{} {}", thousands(n), crate::output::plural(noun)) }
}

/// "model" or "models", for a count printed on its own in a table column.
pub fn models(n: usize) -> &'static str {
    if n == 1 { "model" } else { "models" }
}

pub fn pct(x: f64) -> String {
    format!("{x:.1}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(human(999), "999");
        assert_eq!(human(1_500), "1.5k");
        assert_eq!(human(60_146_924), "60.15M");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(count(1, "model"), "1 model");
        assert_eq!(count(1_000, "model"), "1,000 models");
    }
}
