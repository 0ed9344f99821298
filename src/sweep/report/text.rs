//! The terminal summary: totals, blockers, the fix plan and the caveat, in about a screen.
use std::fmt::Write;

use super::phrases::{
    bf16_line, denominator, exact_line, execution_line, first_line, from_id_line, mix, plan_rates, run_rows, share,
    source_line,
};
use crate::sweep::agreement::explain;
use crate::sweep::document::Report;
use crate::sweep::tally::{Rate, count, human, models, pct, thousands};
use crate::sweep::verdict::Verdict;

const TOP: usize = 10;

/// One line for the terminal when the report goes to a file (`sweep -o FILE`).
pub fn summary_line(r: &Report) -> String {
    let t = &r.totals;
    let mut line = format!(
        "xla2tpu sweep: {}: pass rate {} by count, {} by downloads ({})",
        count(t.total.models, "model"),
        pct(t.pass_rate.by_count),
        pct(t.pass_rate.by_downloads),
        Verdict::ALL
            .into_iter()
            .filter(|v| t.get(*v).models > 0)
            .map(|v| format!("{} {}", thousands(t.get(v).models), v.label()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(x) = &r.exact {
        let _ = write!(line, "; --exact: {} judged from their own config", count(x.models.models, "model"));
    }
    if let (Some(runs), Some(both)) = (r.headline.runs, r.headline.both) {
        let _ = write!(
            line,
            "; runs on the emulated chip {} by count, both pass {} by count",
            pct(runs.by_count),
            pct(both.by_count)
        );
    }
    if let Some(c) = &r.comparison {
        let _ = write!(
            line,
            "; compared with {}: {} by count, {} differ",
            c.backend.name,
            pct(c.totals.pass_rate.by_count),
            count(c.differences.len(), "model")
        );
    }
    line
}

pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let t = &r.totals;
    let _ = writeln!(o, "xla2tpu sweep: {}", count(t.total.models, "model"));
    let _ = writeln!(o, "source:   {}", source_line(r));
    for note in &r.source.notes {
        let _ = writeln!(o, "          note: {note}");
    }
    let _ = writeln!(o, "backend:  {}: {}", r.backend.name, first_line(&r.backend.provenance));
    let _ = writeln!(o);
    let h = &r.headline;
    let _ = writeln!(o, "{}:", denominator(h));
    for (label, rate) in h.figures() {
        let _ =
            writeln!(o, "  {label:<36} {:>6} by count  {:>6} by downloads", pct(rate.by_count), pct(rate.by_downloads));
    }
    if h.runs.is_none() {
        let _ = writeln!(o, "  (runs on the emulated chip left out: --no-executions)");
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "{:<15} {:>8} {:>7}  {:>10} {:>7}", "op coverage", "models", "share", "downloads", "share");
    for v in Verdict::ALL {
        let tally = t.get(v);
        let (by_count, by_downloads) =
            share(r, v).map_or(("-".to_string(), "-".to_string()), |s| (pct(s.by_count), pct(s.by_downloads)));
        let _ = writeln!(
            o,
            "{:<15} {:>8} {:>7}  {:>10} {:>7}",
            v.label(),
            thousands(tally.models),
            by_count,
            human(tally.downloads),
            by_downloads
        );
    }
    let _ = writeln!(
        o,
        "{:<15} {:>8} {:>7}  {:>10} {:>7}",
        "total",
        thousands(t.total.models),
        "",
        human(t.total.downloads),
        ""
    );
    let _ = writeln!(
        o,
        "\ninference proven: {} by count, {} by downloads (pass, pass-inference, and fail with training-only gaps)",
        pct(t.inference_rate.by_count),
        pct(t.inference_rate.by_downloads)
    );
    if t.fail_inference_ok.models > 0 {
        let _ = writeln!(
            o,
            "{} ({} downloads) {} only training (backward) ops: inference is covered",
            count(t.fail_inference_ok.models, "failing model"),
            human(t.fail_inference_ok.downloads),
            if t.fail_inference_ok.models == 1 { "misses" } else { "miss" }
        );
    }
    for v in [Verdict::Pass, Verdict::PassInference, Verdict::Partial, Verdict::Incomplete] {
        let _ = writeln!(o, "  {:<15}{}", v.label(), v.guarantee());
    }
    if let Some(b) = &r.bf16 {
        let _ = writeln!(o, "{}", bf16_line(b));
    }
    if let Some(x) = &r.exact {
        let _ = writeln!(o, "{}", exact_line(x));
    }
    if let Some(x) = &r.execution {
        let _ =
            writeln!(o, "\n{:<15} {:>8} {:>7}  {:>10} {:>7}", "on the chip", "models", "share", "downloads", "share");
        for (label, tally, rests_on) in run_rows(x) {
            let s = Rate::of(tally, h.pytorch);
            let line = format!(
                "{label:<15} {:>8} {:>7}  {:>10} {:>7}  {rests_on}",
                thousands(tally.models),
                pct(s.by_count),
                human(tally.downloads),
                pct(s.by_downloads)
            );
            let _ = writeln!(o, "{}", line.trim_end());
        }
        let _ = writeln!(o, "{}", wrap(&execution_line(x), 100));
    }
    let _ = writeln!(o, "\n{}", wrap(&r.caveat, 100));
    if let Some(x) = &r.execution
        && !x.disagreements.is_empty()
    {
        let _ = writeln!(o, "\nwhere op coverage and execution disagree (op verdict / run on the device: why)");
        for d in x.disagreements.iter().take(TOP) {
            let cause = if d.cause.is_empty() { String::new() } else { format!(" {}", d.cause) };
            let _ = writeln!(
                o,
                "  {:>6} {:<6} {:>9}  {} / {}{cause}: {}  e.g. {}",
                thousands(d.tally.models),
                models(d.tally.models),
                human(d.tally.downloads),
                d.op_verdict.label(),
                d.execution.label(),
                explain(d.op_verdict, d.execution, &d.cause),
                d.examples.first().map_or("", String::as_str)
            );
        }
    }
    if let Some(x) = &r.execution
        && !x.failures.is_empty()
    {
        let _ = writeln!(o, "\nfailures on the device (kind, where in the library)");
        for f in x.failures.iter().take(TOP) {
            let _ = writeln!(
                o,
                "  {:>6} {:<6} {:>9}  {:<11} {}",
                thousands(f.tally.models),
                models(f.tally.models),
                human(f.tally.downloads),
                f.kind,
                printable(&f.location)
            );
        }
    }

    if !r.blockers.is_empty() {
        let _ = writeln!(
            o,
            "\ntop blockers (missing op: failing models and downloads it blocks; alone = its only missing op)"
        );
        for b in r.blockers.iter().take(TOP) {
            let _ = writeln!(
                o,
                "  {:<56} {:>6} {:<6} {:>9}   alone: {:>5} {:<6} {:>9}",
                b.op,
                thousands(b.blocks.models),
                models(b.blocks.models),
                human(b.blocks.downloads),
                thousands(b.alone.models),
                models(b.alone.models),
                human(b.alone.downloads)
            );
        }
    }
    if !r.plan.steps.is_empty() {
        let _ = writeln!(o, "\nfix order (greedy: each op flips the most downloads from fail to pass)");
        let mut from = r.plan.baseline;
        for s in &r.plan.steps {
            let _ = writeln!(
                o,
                "  {:>2}. {:<52} {}  (+{})",
                s.k,
                s.op,
                plan_rates(&from, &s.rate),
                count(s.flipped.models, "model")
            );
            from = s.rate;
        }
        let last = r.plan.steps.last().map(|s| s.rate).unwrap_or(r.plan.baseline);
        let _ = writeln!(
            o,
            "  implement these {} and the pass rate goes from {} to {} by downloads ({} to {} by count)",
            count(r.plan.steps.len(), "op"),
            pct(r.plan.baseline.by_downloads),
            pct(last.by_downloads),
            pct(r.plan.baseline.by_count),
            pct(last.by_count)
        );
    }
    if !r.architectures.is_empty() {
        let _ = writeln!(o, "\ntop architectures by downloads");
        for a in r.architectures.iter().take(TOP) {
            let why = match (a.missing.len(), &a.reason) {
                (0, Some(reason)) => reason.clone(),
                (0, None) => String::new(),
                (n, _) if n <= 3 => format!("missing {}", a.missing.join(" ")),
                (n, _) => format!("missing {} and {} more", a.missing[..3].join(" "), n - 3),
            };
            let line = format!(
                "  {:<44} {:>6} {:<6} {:>9}  {:<24} {why}",
                printable(&a.arch),
                thousands(a.total.models),
                models(a.total.models),
                human(a.total.downloads),
                mix(a)
            );
            let _ = writeln!(o, "{}", line.trim_end());
        }
    }
    for verdict in [Verdict::Unknown, Verdict::Partial] {
        let why: Vec<_> = r.reasons.iter().filter(|x| x.verdict == verdict).take(TOP).collect();
        if why.is_empty() {
            continue;
        }
        let _ = writeln!(o, "\nwhy {} (top {})", verdict.label(), why.len());
        for x in why {
            let _ = writeln!(
                o,
                "  {:>6} {:<6} {:>9}  {}",
                thousands(x.tally.models),
                models(x.tally.models),
                human(x.tally.downloads),
                x.reason
            );
        }
    }
    if let Some(line) = from_id_line(r) {
        let _ = writeln!(o, "\n{line}");
    }
    if let Some(c) = &r.comparison {
        let _ = writeln!(
            o,
            "\ncompared with {}: pass rate {} by count, {} by downloads; {} differ",
            c.backend.name,
            pct(c.totals.pass_rate.by_count),
            pct(c.totals.pass_rate.by_downloads),
            count(c.differences.len(), "model")
        );
        for d in c.differences.iter().take(TOP) {
            let _ = writeln!(
                o,
                "  {:<48} {} here, {} on {}{}",
                printable(&d.id),
                d.verdict.label(),
                d.compare_verdict.label(),
                c.backend.name,
                if d.missing_only_here.is_empty() {
                    String::new()
                } else {
                    format!("; missing only here: {}", d.missing_only_here.join(" "))
                }
            );
        }
    }
    let _ = writeln!(o, "\nper-model results and profile provenance: --format json|md|html|csv --output FILE");
    o
}

/// Model ids come from the network: never let one put control sequences on a terminal.
fn printable(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// Greedy word wrap for the caveat paragraph.
fn wrap(s: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in s.split_whitespace() {
        if line > 0 && line + 1 + word.len() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.len();
    }
    out
}
