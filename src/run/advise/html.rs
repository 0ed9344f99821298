//! `xla2tpu run --advise-html FILE`: the advice as one self-contained page (`templates/advise.html`:
//! inline CSS and SVG, no scripts, no network) with a per-step chart of host syncs, copies to the
//! chip and ops.

use std::path::Path;

use askama::Template;

use super::{Advice, Analysis, StepTotals, bytes, micros};

/// At most this many bars per chart row; longer runs are shown as means of equal runs of steps.
const MAX_BARS: usize = 120;

/// Whether a file's first bytes are those of an earlier advice page (which the next may replace).
pub fn is_page(head: &str) -> bool {
    head.starts_with("<!doctype html>") && head.contains("<title>xla2tpu run --advise: ")
}

pub fn render(advice: &Advice, a: &Analysis, program: &str) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let program_dir = Path::new(program).parent().map(|d| cwd.join(d)).unwrap_or_else(|| cwd.clone());
    let total: f64 = a.findings.iter().map(|f| f.cost_us_per_step).sum();
    // Exact means, not the text summary's rounded ones: a sync every tenth step is 0.1 a step,
    // not "0 host syncs" beside its own finding.
    let steady: &[StepTotals] = if advice.steps.len() > 1 { &advice.steps[1..] } else { &advice.steps };
    let mean = |f: fn(&StepTotals) -> u64| steady.iter().map(f).sum::<u64>() as f64 / steady.len().max(1) as f64;
    let page = Page {
        program: shown(program, &cwd, &program_dir),
        cards: vec![
            (a.steps.to_string(), "training steps".to_string()),
            (figure(mean(|s| s.syncs)), "host syncs per step".to_string()),
            (
                format!("{} ({})", figure(mean(|s| s.h2d)), bytes(a.per_step.h2d_bytes)),
                "copies to the chip per step".to_string(),
            ),
            (figure(mean(|s| s.ops)), "ops dispatched per step".to_string()),
            (format!("~{}", micros(total)), "estimated host cost per step".to_string()),
        ],
        step: a
            .step_source
            .strip_prefix("marker:")
            .map_or("the work between two optimizer steps".to_string(), |m| format!("one call of {m}")),
        compiled: a.compiled,
        cost_model: a.cost_model,
        rows: chart(&advice.steps),
        steps: advice.steps.len(),
        findings: a
            .findings
            .iter()
            .map(|f| Item {
                what: code_spans(&f.what),
                place: f.at.file.as_deref().map(|file| {
                    let file = shown(file, &cwd, &program_dir);
                    f.at.line.map_or(file.clone(), |line| format!("{file}:{line}"))
                }),
                cost: micros(f.cost_us_per_step),
                why: code_spans(&f.why),
                help: code_spans(&f.help),
                example: f.example.clone(),
            })
            .collect(),
        version: env!("CARGO_PKG_VERSION"),
    };
    let mut html = page.render().expect("the advice page renders (its values are strings and numbers)");
    html.push('\n');
    html
}

#[derive(Template)]
#[template(path = "advise.html")]
struct Page {
    program: String,
    /// (value, label): the first screen.
    cards: Vec<(String, String)>,
    step: String,
    compiled: bool,
    cost_model: &'static str,
    rows: Vec<Row>,
    steps: usize,
    findings: Vec<Item>,
    version: &'static str,
}

/// One finding, its text split into plain words and `code` spans.
struct Item {
    what: Vec<(bool, String)>,
    place: Option<String>,
    cost: String,
    why: Vec<(bool, String)>,
    help: Vec<(bool, String)>,
    example: String,
}

/// One row of the chart: host syncs, copies to the chip or ops, a bar per step (or run of steps).
struct Row {
    label: &'static str,
    color: &'static str,
    max: String,
    /// Bars across: the SVG's width in bar slots.
    width: usize,
    bars: Vec<Bar>,
}

struct Bar {
    x: String,
    y: String,
    height: String,
    title: String,
}

/// A path as the page shows it: from the working directory or the program's, else from the
/// installed package (`site-packages/`), else its file name; never the machine's absolute path.
fn shown(file: &str, cwd: &Path, program_dir: &Path) -> String {
    let path = cwd.join(file);
    let relative = [cwd, program_dir].into_iter().find_map(|dir| path.strip_prefix(dir).ok());
    if let Some(relative) = relative.filter(|r| !r.as_os_str().is_empty()) {
        return relative.display().to_string();
    }
    let text = path.to_string_lossy();
    for packages in ["/site-packages/", "/dist-packages/"] {
        if let Some(at) = text.rfind(packages) {
            return text[at + packages.len()..].to_string();
        }
    }
    path.file_name().map_or_else(|| file.to_string(), |name| name.to_string_lossy().to_string())
}

/// Text with Markdown-style `code` spans, as (is code, text) pieces; unbalanced backticks are text.
fn code_spans(text: &str) -> Vec<(bool, String)> {
    if text.matches('`').count() % 2 == 1 {
        return vec![(false, text.to_string())];
    }
    text.split('`').enumerate().filter(|(_, t)| !t.is_empty()).map(|(i, t)| (i % 2 == 1, t.to_string())).collect()
}

/// A mean per step: whole when it is, else to one decimal, and never 0 when it is not.
fn figure(v: f64) -> String {
    if v > 0.0 && v < 0.05 { format!("{v:.2}") } else { trim(v) }
}

/// The chart's rows: one bar per step, or per run of steps when there are more than [`MAX_BARS`].
fn chart(steps: &[StepTotals]) -> Vec<Row> {
    if steps.is_empty() {
        return Vec::new();
    }
    let per = steps.len().div_ceil(MAX_BARS);
    let buckets: Vec<&[StepTotals]> = steps.chunks(per).collect();
    let mean = |b: &[StepTotals], f: fn(&StepTotals) -> u64| b.iter().map(f).sum::<u64>() as f64 / b.len() as f64;
    // (label, its singular, the bar's colour, the step's count)
    type Series = (&'static str, &'static str, &'static str, fn(&StepTotals) -> u64);
    let rows: [Series; 3] = [
        ("host syncs", "host sync", "--sync", |s| s.syncs),
        ("copies to the chip", "copy to the chip", "--copy", |s| s.h2d),
        ("ops dispatched", "op dispatched", "--ops", |s| s.ops),
    ];
    rows.into_iter()
        .map(|(label, one, color, f)| {
            let values: Vec<f64> = buckets.iter().map(|b| mean(b, f)).collect();
            let max = values.iter().cloned().fold(0.0, f64::max);
            let bars = values
                .iter()
                .enumerate()
                .filter(|(_, v)| **v > 0.0)
                .map(|(j, v)| {
                    let height = (v / max * ROW_HEIGHT).max(1.0);
                    let first = j * per + 1;
                    let last = ((j + 1) * per).min(steps.len());
                    let which = if first == last { format!("step {first}") } else { format!("steps {first}–{last}") };
                    let what = if *v == 1.0 { format!("1 {one}") } else { format!("{} {label}", trim(*v)) };
                    Bar {
                        x: format!("{:.1}", j as f64 + 0.1),
                        y: format!("{:.1}", ROW_HEIGHT - height),
                        height: format!("{height:.1}"),
                        title: format!("{which}: {what}"),
                    }
                })
                .collect();
            Row { label, color, max: trim(max), width: buckets.len(), bars }
        })
        .collect()
}

/// The chart's rows are this tall, in the SVG's units (its CSS height, in pixels).
const ROW_HEIGHT: f64 = 46.0;

fn trim(v: f64) -> String {
    if (v - v.round()).abs() < 0.05 { format!("{}", v.round()) } else { format!("{v:.1}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sync in one step of four after the first, in a program under the working directory.
    fn page() -> String {
        let cwd = std::env::current_dir().unwrap();
        let file = cwd.join("train.py").display().to_string();
        let steps: Vec<serde_json::Value> = [0, 0, 1, 0, 0]
            .iter()
            .map(|s| serde_json::json!({"ops": 40, "syncs": s, "eager_mode": "DEFER_NEVER"}))
            .collect();
        let advice: Advice = serde_json::from_value(serde_json::json!({
            "step_source": "optimizer",
            "steps": steps,
            "sites": [{"category": "sync", "kind": "item", "file": file, "line": 9, "steady": 1, "steps_seen": 1}],
        }))
        .unwrap();
        render(&advice, &advice.analyse(), &file)
    }

    #[test]
    fn the_page_shows_paths_as_the_user_knows_them() {
        let html = page();
        let cwd = std::env::current_dir().unwrap().display().to_string();
        assert!(!html.contains(&cwd), "an absolute path on the page: {html}");
        assert!(
            html.contains("<title>xla2tpu run --advise: train.py</title>") && html.contains("<code>train.py:9</code>")
        );
        let venv = Path::new("/v/lib/python3.12/site-packages/transformers/trainer.py");
        assert_eq!(shown(&venv.display().to_string(), Path::new("/p"), Path::new("/p")), "transformers/trainer.py");
        assert_eq!(shown("/elsewhere/x.py", Path::new("/p"), Path::new("/p")), "x.py");
    }

    #[test]
    fn code_in_the_advice_is_code_on_the_page() {
        let html = page();
        // The help text's `.item()` and friends: code elements, no backtick left.
        let findings = &html[html.find("<ol>").unwrap()..html.find("</ol>").unwrap()];
        assert!(!findings.contains('`'), "{findings}");
        assert!(findings.contains("<code>.item()</code>"), "{findings}");
        assert_eq!(
            code_spans("a `b` c"),
            [(false, "a ".to_string()), (true, "b".to_string()), (false, " c".to_string())]
        );
        assert_eq!(code_spans("it`s"), [(false, "it`s".to_string())]);
    }

    #[test]
    fn the_sync_card_agrees_with_the_sync_finding() {
        let html = page();
        // 1 sync in 4 steps: 0.2 a step (rounded to one decimal), as the finding says, not 0.
        assert!(html.contains("<b>0.2</b><span>host syncs per step</span>"), "{html}");
        assert_eq!(figure(0.01), "0.01");
        assert_eq!(figure(0.0), "0");
        assert_eq!(figure(36.0), "36");
    }
}
