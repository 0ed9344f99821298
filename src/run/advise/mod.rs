//! `xla2tpu run --advise`: what makes a program that runs on TorchTPU slow there.
//!
//! The emulator counts, per training step and per call site of the user's code, what costs time
//! on a TPU and nothing on a CPU: host syncs (the host waits for the chip), copies between host
//! and chip, ops whose output shape depends on values, ops dispatched one at a time, optimizers
//! that step parameter by parameter, and Dynamo's graph breaks and recompiles. This module ranks
//! those counts by an estimated cost per step and says what to change, with code.
//!
//! A CPU cannot time a TPU, so the cost is a model with stated constants ([`COST_MODEL`]): good
//! for ranking one hazard against another, not for predicting a step time.

pub mod html;

pub use super::advice::{Advice, Analysis, CompileFacts, Finding, OptimizerInfo, Reason, SiteCount, StepTotals};
use super::site::{Site, site_fn};
use crate::output::count;

/// Assumed costs, in microseconds of host time per occurrence.
const SYNC_US: f64 = 100.0;
const OP_US: f64 = 5.0;
const TRANSFER_US: f64 = 20.0;
const TRANSFER_BYTES_PER_US: f64 = 10_000.0; // 10 GB/s host to chip
const RECOMPILE_US: f64 = 1_000_000.0;

/// The cost model, said wherever a cost is shown.
pub const COST_MODEL: &str = "host sync 100 µs (plus the wait for all queued work), op dispatched alone 5 µs, \
host-chip copy 20 µs + 10 GB/s, recompile 1 s spread over the steps";

/// Below this many bytes per step, a tensor moved to the chip every step is most likely built on
/// the CPU inside the step (a mask, position ids, a constant) rather than input data.
const SMALL_TRANSFER: u64 = 64 * 1024;

impl Advice {
    pub fn analyse(&self) -> Analysis {
        let steady_steps = self.steps.len().saturating_sub(1).max(usize::from(!self.steps.is_empty())) as u64;
        let steady: &[StepTotals] = if self.steps.len() > 1 { &self.steps[1..] } else { &self.steps };
        let mean = |f: fn(&StepTotals) -> u64| {
            if steady.is_empty() {
                0
            } else {
                (steady.iter().map(f).sum::<u64>() as f64 / steady.len() as f64).round() as u64
            }
        };
        let per_step = StepTotals {
            ops: mean(|s| s.ops),
            syncs: mean(|s| s.syncs),
            h2d: mean(|s| s.h2d),
            h2d_bytes: mean(|s| s.h2d_bytes),
            d2h: mean(|s| s.d2h),
            d2h_bytes: mean(|s| s.d2h_bytes),
            dynamic: mean(|s| s.dynamic),
            graph_breaks: mean(|s| s.graph_breaks),
            eager_mode: steady.last().and_then(|s| s.eager_mode.clone()),
        };
        let fused = per_step.eager_mode.as_deref() == Some("DEFER_AND_FUSE");
        let one_step = self.steps.len() == 1;
        let in_steps = |s: &SiteCount| {
            if one_step { (s.first, s.bytes_first, 1) } else { (s.steady, s.bytes_steady, s.steps_seen) }
        };
        let denominator = steady_steps.max(1) as f64;
        let compiled = self.compile.used;
        let mut findings = Vec::new();

        for s in &self.sites {
            let (count, bytes, seen) = in_steps(s);
            if count == 0 {
                continue;
            }
            let per_step = count as f64 / denominator;
            let bytes_per_step = (bytes as f64 / denominator).round() as u64;
            let finding = match s.category.as_str() {
                // An op's output size read back: its dynamic-shape finding carries the cost.
                "sync" if s.kind == OUTPUT_SIZE_SYNC => None,
                "sync" => sync_finding(&s.kind, per_step),
                "transfer" if s.kind == "h2d" => {
                    let repeated = !one_step && s.same_steady == s.steady;
                    transfer_finding(per_step, bytes_per_step, seen == steady_steps, repeated)
                }
                "dynamic" => dynamic_finding(&s.kind, per_step, compiled),
                _ => None, // chip-to-host copies are the host syncs above, at the same sites
            };
            if let Some(mut f) = finding {
                f.at = s.at.clone();
                f.function = s.function.clone();
                f.steps_seen = seen;
                f.bytes_per_step = bytes_per_step;
                findings.push(f);
            }
        }
        for o in &self.optimizers {
            if let Some(f) = optimizer_finding(o) {
                findings.push(f);
            }
        }
        if !compiled && !fused && per_step.ops > 0 {
            findings.push(eager_finding(per_step.ops, per_step.syncs, steady_steps));
        }
        for b in &self.compile.graph_breaks {
            findings.push(Finding {
                kind: "graph_break",
                what: format!("graph break: {}", first_line(&b.reason)),
                at: b.at.clone(),
                function: None,
                // Dynamo logs a break each time it compiles the frame; the step runs it once.
                per_step: 1.0,
                steps_seen: b.count,
                bytes_per_step: 0,
                cost_us_per_step: SYNC_US,
                why: "each break splits the compiled step in two graphs, run one after the other with Python in \
                      between; the values the Python code needs come back to the host"
                    .into(),
                help: "make the code between the graphs traceable (no `.item()`, printing or data-dependent Python \
                       `if` inside the compiled function), or move it out of the function; \
                       `torch._dynamo.explain(fn)(*args)` lists every break with its line"
                    .into(),
                example: GRAPH_BREAK_EXAMPLE.into(),
            });
        }
        for r in &self.compile.recompiles {
            findings.push(Finding {
                kind: "recompile",
                what: format!("recompilation: {}", first_line(&r.reason)),
                at: r.at.clone(),
                function: r.function.clone(),
                per_step: r.count as f64 / denominator,
                steps_seen: r.count,
                bytes_per_step: 0,
                cost_us_per_step: r.count as f64 * RECOMPILE_US / denominator,
                why: "a guard of the compiled graph failed (a new shape, dtype or Python value), so the step was \
                      compiled again"
                    .into(),
                help: "keep shapes fixed from step to step: `DataLoader(..., drop_last=True)`, pad sequences to a few \
                       fixed lengths"
                    .into(),
                example: RECOMPILE_EXAMPLE.into(),
            });
        }
        findings.sort_by(|a, b| b.cost_us_per_step.total_cmp(&a.cost_us_per_step));
        Analysis {
            step_source: self.step_source.clone(),
            steps: self.steps.len(),
            steady_steps,
            per_step,
            compiled,
            findings,
            cost_model: COST_MODEL,
        }
    }
}

fn blank(kind: &'static str, what: String, per_step: f64, cost: f64) -> Finding {
    Finding {
        kind,
        what,
        at: Site::default(),
        function: None,
        per_step,
        steps_seen: 0,
        bytes_per_step: 0,
        cost_us_per_step: cost,
        why: String::new(),
        help: String::new(),
        example: String::new(),
    }
}

/// Each host-sync kind's advice: what it is, what to do, and code doing it.
const SYNC_ADVICE: &[(&str, &str, &str, &str)] = &[
    (
        "item",
        "`.item()` reads a value from the chip",
        "read it every N steps, or keep a running total on the chip and read it once",
        "running_loss += loss.detach()      # stays on the chip\nif (step + 1) % 100 == 0:\n    print(running_loss.item() / 100)  # one sync per 100 steps\n    running_loss.zero_()",
    ),
    (
        "print",
        "printing a tensor copies it to the host",
        "print every N steps, or print a value read once per N steps",
        "if (step + 1) % 100 == 0:\n    print(f\"loss {loss.item():.4f}\")",
    ),
    (
        "bool",
        "Python control flow on a tensor (`if t:`, `while`, `assert`, `and`/`or`) waits for its value",
        "compute both branches on the chip and select with `torch.where`, or decide on Python numbers",
        "# before: if x.sum() > 0: y = a\n#         else:           y = b\ny = torch.where(x.sum() > 0, a, b)",
    ),
    (
        "tolist",
        "`.tolist()` copies a tensor to the host",
        "keep the values on the chip while the step runs; read them every N steps or after the loop",
        "predictions.append(logits.argmax(-1))          # on the chip\n# after the loop:\nall_predictions = torch.cat(predictions).tolist()",
    ),
    (
        "cpu",
        "`.cpu()` / `.to(\"cpu\")` copies a tensor to the host and waits for it",
        "keep the values on the chip while the step runs; move them after the loop, or every N steps",
        "outputs.append(logits.detach())                # on the chip\n# after the loop:\nall_outputs = torch.cat(outputs).cpu()",
    ),
    (
        "save",
        "`torch.save` of chip tensors copies them to the host",
        "save every N steps, not every step",
        "if (step + 1) % 1000 == 0:\n    torch.save(model.state_dict(), \"checkpoint.pt\")",
    ),
];

fn sync_finding(kind: &str, per_step: f64) -> Option<Finding> {
    let Some(&(_, what, help, example)) = SYNC_ADVICE.iter().find(|a| a.0 == kind) else {
        return Some(blank("host_sync", format!("host sync ({kind})"), per_step, per_step * SYNC_US));
    };
    let mut f = blank("host_sync", what.into(), per_step, per_step * SYNC_US);
    f.why = "the host stops and waits until the chip has run everything queued before it; with deferred \
             (fused) eager it also ends the batch of ops being fused"
        .into();
    f.help = help.into();
    f.example = example.into();
    Some(f)
}

fn transfer_finding(per_step: f64, bytes_per_step: u64, every_step: bool, repeated: bool) -> Option<Finding> {
    let cost = per_step * TRANSFER_US + bytes_per_step as f64 / TRANSFER_BYTES_PER_US;
    let mut f = blank("transfer", String::new(), per_step, cost);
    if repeated {
        f.what = format!("the same host tensor ({}) is copied to the chip again every step", bytes(bytes_per_step));
        f.why = "it is the same tensor object each time; unless the program changes it in place between steps, \
                 one copy before the loop is enough"
            .into();
        f.help = "move it to the chip once, before the loop, and use the chip copy in the step".into();
        f.example =
            "x_tpu = x.to(\"tpu\")          # once, before the loop\nfor step in range(steps):\n    out = model(x_tpu)"
                .into();
    } else if bytes_per_step < SMALL_TRANSFER && every_step {
        f.what = format!("a new small tensor ({}) is copied to the chip every step", bytes(bytes_per_step));
        f.why = "if it is built on the CPU inside the step (a mask, position ids, a constant), each step pays a \
                 host-to-chip copy for it; a small input batch pays the same, and is expected"
            .into();
        f.help = "create it on the chip (`device=\"tpu\"`), or build it once before the loop".into();
        f.example = "# before: mask = torch.ones(n, n).tril().to(\"tpu\")   (every step)\n\
                     mask = torch.ones(n, n, device=\"tpu\").tril()        # on the chip, or once before the loop"
            .into();
    } else {
        f.what = format!("{} copied to the chip per step", bytes(bytes_per_step));
        f.why = "input batches must cross to the chip; anything that is the same every step need not".into();
        f.help = "if this is the same data every step (a dataset that fits in HBM, a constant), move it once \
                  before the loop; otherwise load the next batch while the chip computes (DataLoader workers)"
            .into();
        f.example = "loader = DataLoader(dataset, batch_size=32, num_workers=4, drop_last=True)".into();
    }
    Some(f)
}

/// The advice for each op (or indexing) whose output size depends on values.
const DYNAMIC_ADVICE: &[(&str, &str, &str, &str)] = &[
    (
        "boolean mask index",
        "`x[mask]` with a boolean mask: its size depends on the mask's values",
        "keep the shape: zero out (or mask) instead of selecting",
        "# before: loss = per_token[mask].mean()\nloss = (per_token * mask).sum() / mask.sum()",
    ),
    (
        "boolean mask assignment",
        "`x[mask] = v` with a boolean mask is computed through the mask's nonzero positions",
        "use `masked_fill` or `torch.where`, which keep the shape",
        "# before: x[mask] = 0.0\nx = x.masked_fill(mask, 0.0)",
    ),
    (
        "aten::nonzero",
        "`x[mask]` with a boolean mask, `torch.nonzero`, `torch.where(cond)`: the number of results depends on values",
        "keep the shape: select with `torch.where(cond, a, b)` (three arguments) or multiply by the mask",
        "# before: loss = per_token[mask].mean()\nloss = (per_token * mask).sum() / mask.sum()\n# before: kept = scores[scores > t]\nkept = torch.where(scores > t, scores, 0.0)",
    ),
    (
        "aten::masked_select",
        "`torch.masked_select`: the number of results depends on the mask",
        "keep the shape with `torch.where` and a mask",
        "# before: v = torch.masked_select(x, m)\nv = torch.where(m, x, 0.0)",
    ),
    (
        "aten::repeat_interleave.Tensor",
        "`repeat_interleave` with a tensor of repeats: the output size depends on values",
        "pass the output size when you know it",
        "y = torch.repeat_interleave(x, repeats, dim=0, output_size=total)",
    ),
];

fn dynamic_finding(kind: &str, per_step: f64, compiled: bool) -> Option<Finding> {
    let (what, help, example) = match DYNAMIC_ADVICE.iter().find(|a| a.0 == kind) {
        Some(&(_, what, help, example)) => (what, help, example),
        None if kind.contains("unique") => (
            "`torch.unique`: the number of results depends on values",
            "compute it once outside the step, or on the CPU before the loop",
            "",
        ),
        None => (
            "an op whose output size depends on values",
            "compute it once outside the step, or on the CPU before the loop",
            "",
        ),
    };
    let mut f = blank("dynamic_shape", what.into(), per_step, per_step * SYNC_US);
    f.why = if compiled {
        "the host waits for the chip to learn the output size, and a compiled step is compiled again for each new size"
    } else {
        "the host waits for the chip to learn the output size before it can dispatch what follows"
    }
    .into();
    f.help = help.into();
    f.example = example.into();
    Some(f)
}

fn optimizer_finding(o: &OptimizerInfo) -> Option<Finding> {
    // No ops dispatched: its parameters are not on the chip (a CPU program), nothing to gain.
    if o.implementation != "for-loop" || o.steps == 0 || o.ops == 0 {
        return None;
    }
    let ops = o.ops as f64 / o.steps as f64;
    let mut f = blank(
        "optimizer_loop",
        format!(
            "{} steps its {} one at a time ({} per step)",
            o.class,
            count(o.params, "parameter"),
            count(ops.round() as u64, "op")
        ),
        1.0,
        ops * OP_US,
    );
    f.at = o.at.clone();
    f.function = o.function.clone();
    f.steps_seen = o.steps;
    f.why = "a for-loop optimizer dispatches a few ops per parameter; the foreach form does the same work \
             in a few ops over all parameters"
        .into();
    if o.torch_optimizer && o.foreach == Some(false) {
        f.help = "drop `foreach=False`: torch picks the foreach form on tpu by default".into();
        f.example = format!("optimizer = torch.optim.{}(model.parameters(), lr=1e-3)", o.class);
    } else if o.torch_optimizer {
        f.help = "pass `foreach=True`".into();
        f.example = format!("optimizer = torch.optim.{}(model.parameters(), lr=1e-3, foreach=True)", o.class);
    } else {
        f.help = "use a torch.optim optimizer (foreach by default on tpu), or write the update with the \
                  `torch._foreach_*` ops"
            .into();
        f.example = "torch._foreach_add_(params, grads, alpha=-lr)   # one op for all parameters".into();
    }
    Some(f)
}

fn eager_finding(ops: u64, syncs: u64, steps: u64) -> Finding {
    let mut f = blank(
        "eager_dispatch",
        format!("{} per step dispatched one at a time (Strict Eager, TorchTPU's default)", count(ops, "op")),
        1.0,
        ops as f64 * OP_US,
    );
    f.steps_seen = steps;
    f.why = "torch_xla traced the whole step and compiled it into one graph at mark_step; TorchTPU runs \
             each op as it comes unless told to defer and fuse, or to compile"
        .into();
    f.help = if syncs > 0 {
        "remove the host syncs above first (each ends a fused batch), then defer and fuse, or compile the model"
    } else {
        "defer and fuse (no code change in the step), or compile the model"
    }
    .into();
    f.example = "torch.tpu.eager_mode = torch.tpu.EagerMode.DEFER_AND_FUSE   # once, before the loop\n\
                 # or:\nmodel = torch.compile(model, backend=\"tpu\")"
        .into();
    f
}

/// The host-sync kind of an op whose output size depends on values (`nonzero`, `x[mask]`).
const OUTPUT_SIZE_SYNC: &str = "output size";

const GRAPH_BREAK_EXAMPLE: &str = "explanation = torch._dynamo.explain(model)(batch)\nprint(explanation.break_reasons)";
const RECOMPILE_EXAMPLE: &str = "loader = DataLoader(dataset, batch_size=32, shuffle=True, drop_last=True)";

/// Every code example a finding can carry, with the finding it belongs to: code we print for
/// people to paste, so `tests/advise.rs` runs each on the emulator.
pub fn examples() -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = Vec::new();
    let mut add = |what: String, f: Option<Finding>| {
        if let Some(f) = f.filter(|f| !f.example.is_empty()) {
            all.push((what, f.example));
        }
    };
    for &(kind, ..) in SYNC_ADVICE {
        add(format!("host sync {kind}"), sync_finding(kind, 1.0));
    }
    for (repeated, bytes) in [(true, 64), (false, 64), (false, SMALL_TRANSFER)] {
        add(format!("transfer of {bytes} B, repeated {repeated}"), transfer_finding(1.0, bytes, true, repeated));
    }
    for &(kind, ..) in DYNAMIC_ADVICE {
        add(format!("dynamic shape {kind}"), dynamic_finding(kind, 1.0, false));
    }
    for (torch_optimizer, foreach) in [(true, Some(false)), (true, None), (false, None)] {
        let o = OptimizerInfo {
            class: "AdamW".into(),
            torch_optimizer,
            foreach,
            implementation: "for-loop".into(),
            steps: 1,
            ops: 1,
            ..OptimizerInfo::default()
        };
        add(format!("optimizer, torch's {torch_optimizer}, foreach {foreach:?}"), optimizer_finding(&o));
    }
    add("eager dispatch".into(), Some(eager_finding(1, 0, 1)));
    all.push(("graph break".into(), GRAPH_BREAK_EXAMPLE.into()));
    all.push(("recompile".into(), RECOMPILE_EXAMPLE.into()));
    all
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// `1.2 KiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{v:.1} {}", UNITS[unit]) }
}

/// `12 µs`, `1.4 ms`.
pub fn micros(us: f64) -> String {
    if us >= 1_000_000.0 {
        format!("{:.1} s", us / 1_000_000.0)
    } else if us >= 1000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

/// The text a person reads after the run.
pub fn render(out: &mut impl std::io::Write, a: &Analysis, who: Option<&str>, marker: bool) -> std::io::Result<()> {
    let whose = who.map(|w| format!(" ({w})")).unwrap_or_default();
    if a.steps == 0 {
        let hint = if marker {
            "the step marker was never called"
        } else {
            "no optimizer step was seen; name the function that runs one step with --step-marker"
        };
        return writeln!(out, "xla2tpu run --advise{whose}: no training step to advise on: {hint}");
    }
    let source =
        a.step_source.strip_prefix("marker:").map_or("optimizer steps".to_string(), |m| format!("calls of {m}"));
    let p = &a.per_step;
    writeln!(
        out,
        "xla2tpu run --advise{whose}: {} ({source}); per step{}: {}, {}, {} to the chip ({}), {} to the host ({}), {}{}",
        count(a.steps, "step"),
        if a.steps > 1 { format!(" after the first (mean of {})", a.steady_steps) } else { String::new() },
        count(p.ops, "op"),
        count(p.syncs, "host sync"),
        count(p.h2d, "copy"),
        bytes(p.h2d_bytes),
        p.d2h,
        bytes(p.d2h_bytes),
        count(p.dynamic, "dynamic-shape op"),
        if a.compiled {
            ", compiled with torch.compile".to_string()
        } else {
            p.eager_mode.as_deref().map(|m| format!(", eager mode {m}")).unwrap_or_default()
        },
    )?;
    if a.findings.is_empty() {
        return writeln!(out, "  nothing to change: no host sync, per-step copy or dynamic shape in the step");
    }
    for (i, f) in a.findings.iter().enumerate() {
        let place = if f.at.file.is_some() {
            format!(" at {}", site_fn(&f.at, f.function.as_deref().map(resumed).as_deref()))
        } else {
            String::new()
        };
        let how_often = match f.kind {
            "eager_dispatch" | "optimizer_loop" => String::new(),
            "graph_break" => {
                format!(" (found in {})", count(f.steps_seen, "compilation"))
            }
            "recompile" if f.steps_seen == 1 => " (once)".to_string(),
            "recompile" => format!(" ({} times)", f.steps_seen),
            _ => format!(
                " ({} per step, in {} of {})",
                trim_float(f.per_step),
                f.steps_seen,
                count(a.steady_steps, "step")
            ),
        };
        writeln!(out, "  {}. {}{place}{how_often}: ~{}/step", i + 1, f.what, micros(f.cost_us_per_step))?;
        writeln!(out, "     why: {}", f.why)?;
        writeln!(out, "     help: {}", f.help)?;
        for line in f.example.lines() {
            writeln!(out, "         {line}")?;
        }
    }
    let total: f64 = a.findings.iter().map(|f| f.cost_us_per_step).sum();
    writeln!(out, "  estimated host time these cost per step: ~{} (assumed: {})", micros(total), a.cost_model)
}

/// Dynamo names the rest of a function after a graph break `torch_dynamo_resume_in_forward_at_14`.
fn resumed(function: &str) -> String {
    match function.strip_prefix("torch_dynamo_resume_in_").and_then(|r| r.rsplit_once("_at_")) {
        Some((name, line)) => format!("{name}, after the graph break at line {line}"),
        None => function.to_string(),
    }
}

fn trim_float(v: f64) -> String {
    if (v - v.round()).abs() < 0.05 { format!("{}", v.round()) } else { format!("{v:.1}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advice(json: serde_json::Value) -> Advice {
        serde_json::from_value(json).unwrap()
    }

    fn step(ops: u64, mode: &str) -> serde_json::Value {
        serde_json::json!({"ops": ops, "eager_mode": mode})
    }

    #[test]
    fn per_step_figures_leave_out_the_first_step_and_findings_rank_by_cost() {
        let a = advice(serde_json::json!({
            "step_source": "optimizer",
            "steps": [step(500, "DEFER_NEVER"), step(40, "DEFER_NEVER"), step(40, "DEFER_NEVER")],
            "sites": [
                {"category": "sync", "kind": "item", "file": "/p/t.py", "line": 9, "first": 1, "steady": 2, "steps_seen": 2},
                {"category": "sync", "kind": "print", "file": "/p/t.py", "line": 3, "first": 1},
                {"category": "dynamic", "kind": "aten::nonzero", "file": "/p/t.py", "line": 7, "steady": 6, "steps_seen": 2},
            ],
        }));
        let r = a.analyse();
        assert_eq!((r.steps, r.steady_steps, r.per_step.ops), (3, 2, 40));
        let kinds: Vec<(&str, Option<u32>)> = r.findings.iter().map(|f| (f.kind, f.at.line)).collect();
        // 3 nonzero a step (300 µs) > 40 ops alone (200 µs) > 1 item a step (100 µs); the print
        // happened in step 1 only (set-up), so it is not a per-step cost.
        assert_eq!(kinds, vec![("dynamic_shape", Some(7)), ("eager_dispatch", None), ("host_sync", Some(9))]);
        assert_eq!(r.findings[0].per_step, 3.0);
    }

    #[test]
    fn deferred_eager_and_compile_have_no_dispatch_finding() {
        let fused = advice(serde_json::json!({
            "step_source": "optimizer", "steps": [step(50, "DEFER_AND_FUSE"), step(50, "DEFER_AND_FUSE")], "sites": [],
        }));
        assert!(fused.analyse().findings.is_empty());
        let compiled = advice(serde_json::json!({
            "step_source": "optimizer", "steps": [step(50, "DEFER_NEVER")], "sites": [],
            "compile": {"used": true, "recompiles": [{"reason": "size mismatch", "count": 2, "file": "/p/m.py", "line": 4, "function": "forward"}]},
        }));
        let r = compiled.analyse();
        assert_eq!(r.findings.len(), 1);
        assert_eq!((r.findings[0].kind, r.findings[0].cost_us_per_step), ("recompile", 2.0 * RECOMPILE_US));
    }

    #[test]
    fn a_copy_is_told_apart_by_whether_the_same_tensor_crosses_again() {
        let a = advice(serde_json::json!({
            "step_source": "optimizer",
            "steps": [step(1, "DEFER_AND_FUSE"), step(1, "DEFER_AND_FUSE"), step(1, "DEFER_AND_FUSE")],
            "sites": [
                {"category": "transfer", "kind": "h2d", "file": "/p/t.py", "line": 5, "steady": 2, "same_steady": 2, "bytes_steady": 2048, "steps_seen": 2},
                {"category": "transfer", "kind": "h2d", "file": "/p/t.py", "line": 6, "steady": 2, "bytes_steady": 128, "steps_seen": 2},
                {"category": "transfer", "kind": "h2d_batch", "file": "/p/t.py", "line": 7, "steady": 2, "bytes_steady": 1048576, "steps_seen": 2},
            ],
        }));
        let r = a.analyse();
        let whats: Vec<&str> = r.findings.iter().map(|f| f.what.as_str()).collect();
        assert_eq!(whats.len(), 2, "a DataLoader batch is not advised on: {whats:?}");
        assert!(whats.iter().any(|w| w.starts_with("the same host tensor (1.0 KiB)")), "{whats:?}");
        assert!(whats.iter().any(|w| w.starts_with("a new small tensor (64 B)")), "{whats:?}");
    }

    #[test]
    fn the_summary_counts_in_words() {
        let summary = |n: u64| {
            let each = serde_json::json!({"ops": n, "syncs": n, "h2d": n, "d2h": n, "dynamic": n, "eager_mode": "DEFER_NEVER"});
            let a = advice(serde_json::json!({"step_source": "optimizer", "steps": [each.clone(), each], "sites": []}));
            let mut out = Vec::new();
            render(&mut out, &a.analyse(), None, false).unwrap();
            String::from_utf8(out).unwrap()
        };
        let one = summary(1);
        assert!(
            one.contains(": 1 op, 1 host sync, 1 copy to the chip (0 B), 1 to the host (0 B), 1 dynamic-shape op"),
            "{one}"
        );
        assert!(one.contains("1 op per step dispatched one at a time"), "{one}");
        let two = summary(2);
        assert!(
            two.contains(": 2 ops, 2 host syncs, 2 copies to the chip (0 B), 2 to the host (0 B), 2 dynamic-shape ops"),
            "{two}"
        );
        assert!(two.contains("2 ops per step dispatched one at a time"), "{two}");
    }

    #[test]
    fn resumed_functions_and_sizes_read_well() {
        assert_eq!(resumed("torch_dynamo_resume_in_forward_at_14"), "forward, after the graph break at line 14");
        assert_eq!(resumed("forward"), "forward");
        assert_eq!(
            (bytes(512), bytes(1536), micros(250.0), micros(2_500.0), micros(3e6)),
            (
                "512 B".to_string(),
                "1.5 KiB".to_string(),
                "250 µs".to_string(),
                "2.5 ms".to_string(),
                "3.0 s".to_string()
            )
        );
    }
}
