//! What every HTML page we write shares (the sweep report, `run --advise`'s page). Pages are
//! askama templates (`templates/`), self-contained (inline CSS, no scripts, no network), and
//! askama escapes every value it writes into them; the tables below are `templates/table.html`.

/// A verdict's badge: its CSS class (`v-pass`) and label.
pub struct Badge {
    pub class: &'static str,
    pub label: &'static str,
}

/// A table cell; the template writes each kind with its class, escaped.
pub enum Cell {
    Text(String),
    /// A number, right-aligned.
    Num(String),
    /// Operators, code locations: monospace, wrapped anywhere.
    Code(String),
    /// A model id.
    Id(String),
    /// An architecture name: monospace, not wrapped.
    Arch(String),
    /// A verdict's badge and text after it (` exact`).
    Badge(Badge, &'static str),
    /// Text with a tooltip.
    Titled(String, String),
    /// Model ids, one per line.
    Ids(Vec<String>),
}

/// One column's name; `num` right-aligns it.
pub struct Head {
    pub label: String,
    pub num: bool,
}

/// A table of a report: its columns and rows. A long table has a `class`: on a phone its cells
/// are labelled by CSS rules the page writes once (`labels` in `templates/table.html`), not by
/// a `data-label` on every cell.
#[derive(Default)]
pub struct Table {
    pub head: Vec<Head>,
    pub rows: Vec<Vec<Cell>>,
    pub class: &'static str,
}

impl Table {
    /// A table with these columns; a name starting with `#` is numeric (the `#` is dropped,
    /// except for a name that is only `#`).
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = S>) -> Table {
        let head = columns
            .into_iter()
            .map(|c| {
                let c: String = c.into();
                match c.strip_prefix('#') {
                    Some("") => Head { label: c, num: true },
                    Some(rest) => Head { label: rest.to_string(), num: true },
                    None => Head { label: c, num: false },
                }
            })
            .collect();
        Table { head, rows: Vec::new(), class: "" }
    }

    /// The name of column `i` for its cells' `data-label`, shown beside each cell on a phone;
    /// `None` in a table with a class.
    pub fn data_label(&self, i: usize) -> Option<&str> {
        self.head.get(i).filter(|_| self.class.is_empty()).map(|h| h.label.as_str())
    }
}
