//! What every HTML page we write shares (the sweep report, `run --advise`'s page): escaping.
//! Pages are self-contained (inline CSS and SVG, no scripts, no network), so every string that
//! comes from data goes through [`escape`].

/// HTML-escapes text for element content and quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
