//! One row per model, for spreadsheets and diffs between runs. A text cell a spreadsheet would
//! run as a formula (a model id from the Hub starting with `=`, `+`, `-`, `@`, a tab or a CR)
//! gets a leading `'`, OWASP's advice for CSV injection.
use crate::sweep::document::Report;

fn text(cell: String) -> String {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{cell}") } else { cell }
}

pub fn render(r: &Report) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let compare = r.comparison.as_ref().map(|c| c.backend.name.as_str());
    let mut header = vec![
        "rank",
        "model_id",
        "downloads",
        "verdict",
        "architecture",
        "profiles",
        "missing_ops",
        "reason",
        "coverage",
        "confidence",
        "exact",
        "model_type_from_id",
    ];
    if r.bf16.is_some() {
        header.extend(["verdict_bf16", "missing_ops_bf16"]);
    }
    if r.execution.is_some() {
        header.extend(["execution", "execution_detail", "execution_rests_on", "execution_bf16"]);
    }
    let (cv, cm) = compare.map(|n| (format!("verdict_{n}"), format!("missing_ops_{n}"))).unwrap_or_default();
    if compare.is_some() {
        header.extend([cv.as_str(), cm.as_str()]);
    }
    w.write_record(&header).expect("in-memory CSV");
    for m in &r.models {
        let mut rec = vec![
            m.rank.to_string(),
            m.id.clone(),
            m.downloads.to_string(),
            m.result.verdict.label().to_string(),
            m.arch.clone(),
            m.profiles.join(" + "),
            m.result.missing.join(" "),
            m.result.reason.clone().unwrap_or_default(),
            m.result.coverage.map(|c| c.label().to_string()).unwrap_or_default(),
            m.result.confidence.join("; "),
            m.exact.to_string(),
            m.model_type_from_id.clone().unwrap_or_default(),
        ];
        if r.bf16.is_some() {
            let b = m.bf16.as_ref();
            rec.extend([
                b.map(|b| b.verdict.label().to_string()).unwrap_or_default(),
                b.map(|b| b.missing.join(" ")).unwrap_or_default(),
            ]);
        }
        if r.execution.is_some() {
            let label = |e: Option<&crate::sweep::execution::ExecVerdict>| {
                e.map(|e| e.status.label().to_string()).unwrap_or_default()
            };
            rec.extend([
                label(m.execution.as_ref()),
                m.execution.as_ref().map(|e| e.detail()).unwrap_or_default(),
                m.execution.as_ref().map(|e| e.unchecked.join("; ")).unwrap_or_default(),
                label(m.execution_bf16.as_ref()),
            ]);
        }
        if let Some(c) = &m.compare {
            rec.extend([c.verdict.label().to_string(), c.missing.join(" ")]);
        }
        w.write_record(rec.into_iter().map(text)).expect("in-memory CSV");
    }
    String::from_utf8(w.into_inner().expect("in-memory CSV")).expect("UTF-8 in, UTF-8 out")
}
