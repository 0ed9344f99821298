//! What an SPMD program (`xr.use_spmd()`) did as one process driving every chip, and does not
//! as one process per chip:
//! - it was started with plain `python`; migrated, it must be started by torchrun, and where no
//!   launch script of the run starts it (TPU925 converts those) the report says so (TPU926);
//! - every value it read was the global batch's; split, a process reads its slice's (TPU234).

use rustc_hash::FxHashMap;

use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::{Checker, Diagnostic, SliceRead};
use crate::migrate::facts::{SPMD_HELPER_NAME, USE_SPMD};
use crate::migrate::fix::{Edit, Fix};
use crate::migrate::rules::Builtin;
use crate::migrate::semantic::{ScopeId, Semantic};

impl Checker<'_> {
    /// TPU926 at the program's first `use_spmd()` (or, migrated, the call TPU216 made of it),
    /// unless a launch script of the run starts an SPMD program.
    pub(super) fn report_unlaunched_spmd(&self, diagnostics: &mut Vec<Diagnostic>) {
        let Some(rule) = self.rules.builtin(Builtin::SpmdUnlaunched) else { return };
        let last = USE_SPMD.rsplit('.').next().unwrap_or(USE_SPMD);
        if !self.text.contains(last) && !self.text.contains(SPMD_HELPER_NAME) {
            return;
        }
        if self.run.is_some_and(|run| run.launches_spmd_program()) {
            return;
        }
        // Not the calls inside the rules' helpers (`torchtpu_device_mesh` makes the process one of
        // the job's too): the program's own.
        let helpers: Vec<_> = self
            .inventory
            .defs
            .values()
            .filter(|d| self.rules.is_shared_helper(d.name.as_str()))
            .map(|d| d.range())
            .collect();
        let calls = self.inventory.calls_of(self.sem, &[USE_SPMD, SPMD_HELPER_NAME]);
        let Some(call) = calls.into_iter().find(|c| !helpers.iter().any(|h| h.contains_range(c.range()))) else {
            return;
        };
        let message = self.message(rule, &self.text[call.func.range()]);
        diagnostics.push(Diagnostic { rule, range: call.range(), message, note: None, fix: None });
    }
}

/// Where an SPMD program splits a batch (`xs.mark_sharding(x, mesh, ("data", None))`, or the
/// helper TPU228 makes of it): under SPMD `x` stayed the global batch, migrated each process
/// holds its slice.
const SPLITS: &[&str] =
    &["torch_xla.distributed.spmd.mark_sharding", "torch_xla.experimental.xla_sharding.mark_sharding"];
const SHARD_HELPER: &str = "torchtpu_shard_batch";
/// The helpers TPU234's fix wraps a read value in, and `torchtpu_backward` (TPU231): what they
/// return is the global batch's.
const GLOBAL_HELPERS: &[&str] =
    &["torchtpu_global_mean", "torchtpu_global_sum", "torchtpu_global_cat", "torchtpu_backward"];

/// Reading a tensor's value, or showing it.
const READ_METHODS: &[&str] = &["item", "tolist", "numpy"];
/// A logger's or a metrics writer's methods (`logger.info(...)`, `writer.add_scalar(...)`).
const LOG_METHODS: &[&str] = &["debug", "info", "warning", "log", "add_scalar", "add_scalars"];
/// Methods that put a value into a container (`losses.append(loss)`).
const COLLECTING: &[&str] = &["append", "extend", "add", "update", "insert"];
/// Methods that change only where a value is or its float type: a reduced value stays what it
/// was (`loss.detach().float()`), per-sample values stay per sample (`logits.cpu()`).
const KEEPING: &[&str] = &["cpu", "detach", "float", "double", "half", "bfloat16", "to", "clone", "contiguous"];
/// Methods computing each sample's values from its own (`pred.eq(y)`, `logits.sigmoid()`).
const ELEMENTWISE: &[&str] = &[
    "long", "int", "bool", "sigmoid", "exp", "log", "abs", "neg", "round", "eq", "ne", "lt", "le", "gt", "ge", "pow",
    "square", "sqrt", "relu", "tanh", "clamp",
];
/// Methods whose `dim` must not be 0 for the samples to stay on dim 0 (`logits.argmax(dim=1)`).
const ALONG: &[&str] = &["argmax", "argmin", "softmax", "log_softmax"];
/// `torch.nn.functional` losses: a mean over the slice's elements unless `reduction` says
/// otherwise. Class weights make the mean a weighted one, which equal slices do not average.
const LOSSES: &[&str] = &[
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "poisson_nll_loss",
    "hinge_embedding_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
];

/// What a value computed from a split batch is, for making it the global batch's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Per-sample values along dim 0: the global batch's are the slices in rank order.
    Slice,
    /// A mean over the slice (a mean-reduced loss, an accuracy): the processes' mean.
    Mean,
    /// A sum or a count over the slice: the processes' sum.
    Sum,
    /// The slice's size (`y.size(0)`), an int: times the slices.
    Size,
    /// Anything else: a person makes it global.
    Unknown,
}

impl Kind {
    /// `a += b`, accumulated over steps: the global of a sum of means is the mean of the sums.
    fn accumulate(a: Option<Kind>, b: Kind) -> Kind {
        match (a, b) {
            (None, k) => k,
            (Some(Kind::Size), Kind::Size) => Kind::Size,
            (Some(Kind::Mean), Kind::Mean) => Kind::Mean,
            (Some(Kind::Sum | Kind::Size), Kind::Sum | Kind::Size) => Kind::Sum,
            _ => Kind::Unknown,
        }
    }

    /// The helper making a value of this kind global.
    fn helper(self) -> Option<&'static str> {
        match self {
            Kind::Slice => Some("torchtpu_global_cat"),
            Kind::Mean => Some("torchtpu_global_mean"),
            Kind::Sum | Kind::Size => Some("torchtpu_global_sum"),
            Kind::Unknown => None,
        }
    }
}

/// The values of one function (or the module's top level) computed from a split batch, walked
/// in source order: names bound from the batch or a value computed from it, until a statement
/// makes them global (`loss.backward()`, which TPU231 turns into the global mean;
/// `dist.all_reduce(t, ...)`) or rebinds them.
struct SliceFlow<'s, 'x> {
    sem: &'s Semantic,
    text: &'s str,
    scope: ScopeId,
    /// Functions of the file returning a value computed from a split batch, by name.
    returning: &'s FxHashMap<String, Kind>,
    /// Loss modules of the file (`self.criterion = nn.CrossEntropyLoss()`), by their spelling.
    held: &'s FxHashMap<String, Held>,
    tainted: FxHashMap<String, Kind>,
    /// What the body returns, when computed from a split batch.
    returns: Option<Kind>,
    reads: Vec<SliceRead<'x>>,
}

impl<'s, 'x> SliceFlow<'s, 'x> {
    fn qualified(&self, e: &Expr) -> Option<String> {
        self.sem.qualified_name(e, self.scope).map(|q| q.name)
    }

    fn calls_builtin(&self, c: &ast::ExprCall, names: &[&str]) -> bool {
        matches!(&*c.func, Expr::Name(f) if names.contains(&f.id.as_str())) && self.qualified(&c.func).is_none()
    }

    /// A read call's value: the receiver of `.item()`, the argument of `float()`.
    fn read_value<'e>(&self, c: &'e ast::ExprCall) -> Option<&'e Expr> {
        match &*c.func {
            Expr::Attribute(m) if READ_METHODS.contains(&m.attr.id.as_str()) && c.arguments.is_empty() => {
                Some(&m.value)
            }
            _ if self.calls_builtin(c, &["float", "int"]) && c.arguments.args.len() == 1 => c.arguments.args.first(),
            _ => None,
        }
    }

    /// What `e` is when computed from a split batch; `None` when it is not (or is made global:
    /// a read TPU234 converts, a global helper's result).
    fn kind(&self, e: &Expr) -> Option<Kind> {
        // Per-sample values combined with each other or with a value every process has
        // (`pred == y`, `logits * 2`) stay per-sample; anything else made of them is a person's.
        let elementwise = |es: &mut dyn Iterator<Item = &Expr>| -> Option<Kind> {
            let kinds: Vec<Kind> = es.filter_map(|x| self.kind(x)).collect();
            match kinds.as_slice() {
                [] => None,
                ks if ks.iter().all(|k| *k == Kind::Slice) => Some(Kind::Slice),
                _ => Some(Kind::Unknown),
            }
        };
        match e {
            Expr::Name(n) => self.tainted.get(n.id.as_str()).copied(),
            Expr::Call(c) => self.call_kind(c),
            Expr::Compare(c) => elementwise(&mut std::iter::once(&*c.left).chain(c.comparators.iter())),
            Expr::BinOp(b) => {
                let (l, r) = (self.kind(&b.left), self.kind(&b.right));
                if matches!((l, r), (Some(Kind::Slice), None | Some(Kind::Slice)) | (None, Some(Kind::Slice))) {
                    return Some(Kind::Slice);
                }
                Some(linear(l, b.op, r)?.unwrap_or(Kind::Unknown))
            }
            Expr::UnaryOp(u) => match u.op {
                ast::UnaryOp::USub | ast::UnaryOp::UAdd => self.kind(&u.operand),
                _ => self.kind(&u.operand).map(|k| if k == Kind::Slice { k } else { Kind::Unknown }),
            },
            Expr::Tuple(t) => elementwise(&mut t.elts.iter()),
            Expr::Subscript(s) => {
                // `x.shape[0]`: the slice's size; any other part of a slice is a person's.
                if let Expr::Attribute(a) = &*s.value
                    && a.attr.id.as_str() == "shape"
                    && is_zero(&s.slice)
                    && self.kind(&a.value) == Some(Kind::Slice)
                {
                    return Some(Kind::Size);
                }
                // `batch["input_ids"]`: a field of a batch of samples.
                match self.kind(&s.value) {
                    Some(Kind::Slice) if s.slice.is_string_literal_expr() => Some(Kind::Slice),
                    k => k.map(|_| Kind::Unknown),
                }
            }
            Expr::Attribute(a) => self.kind(&a.value).map(|_| Kind::Unknown),
            _ => {
                let mut found = false;
                Finder(&mut |x: &Expr| found |= matches!(x, Expr::Name(n) if self.tainted.contains_key(n.id.as_str())))
                    .visit_expr(e);
                found.then_some(Kind::Unknown)
            }
        }
    }

    fn call_kind(&self, c: &ast::ExprCall) -> Option<Kind> {
        let args = || c.arguments.args.iter().chain(c.arguments.keywords.iter().map(|k| &k.value));
        if let Some(value) = self.read_value(c) {
            // Converted where it is read, so global from here on, unless it cannot be.
            return self.kind(value).filter(|k| self.wraps(value, *k).is_none());
        }
        match &*c.func {
            Expr::Name(f) if f.id.as_str() == SHARD_HELPER => return Some(Kind::Slice),
            Expr::Name(f) if GLOBAL_HELPERS.contains(&f.id.as_str()) => return None,
            Expr::Name(f) if self.returning.contains_key(f.id.as_str()) => {
                return self.returning.get(f.id.as_str()).copied();
            }
            Expr::Attribute(f) if self.returning.contains_key(f.attr.id.as_str()) => {
                return self.returning.get(f.attr.id.as_str()).copied();
            }
            _ => {}
        }
        let spelled = &self.text[c.func.range()];
        if let Some(&Held::Loss(criterion)) = self.held.get(spelled) {
            return args().any(|a| self.kind(a).is_some()).then_some(criterion);
        }
        let q = self.qualified(&c.func);
        if let Some(loss) = q.as_deref().and_then(|q| q.strip_prefix("torch.nn.functional."))
            && LOSSES.contains(&loss)
        {
            return args().any(|a| self.kind(a).is_some()).then(|| loss_kind(c, 2));
        }
        match q.as_deref() {
            Some("torch.mean" | "torch.sum") if c.arguments.len() == 1 => {
                let of = self.kind(c.arguments.args.first()?)?;
                return Some(reduced(of, q.as_deref() == Some("torch.mean")));
            }
            Some("len") | None if self.calls_builtin(c, &["len"]) => {
                return self
                    .kind(c.arguments.args.first()?)
                    .map(|k| if k == Kind::Slice { Kind::Size } else { Kind::Unknown });
            }
            _ => {}
        }
        // A method of a value computed from the slice; `self.model(x)` is a call like `model(x)`.
        if let Expr::Attribute(m) = &*c.func
            && q.is_none()
            && let Some(of) = self.kind(&m.value)
        {
            let method = m.attr.id.as_str();
            let no_args = c.arguments.is_empty();
            return Some(match method {
                "mean" if no_args => reduced(of, true),
                "sum" | "count_nonzero" if no_args => reduced(of, false),
                "size" if of == Kind::Slice && c.arguments.args.first().is_some_and(is_zero) => Kind::Size,
                "numel" if of == Kind::Slice && no_args => Kind::Size,
                _ if KEEPING.contains(&method) && matches!(of, Kind::Slice | Kind::Mean | Kind::Sum) => {
                    if args().any(|a| self.kind(a).is_some()) { Kind::Unknown } else { of }
                }
                _ if ELEMENTWISE.contains(&method) && of == Kind::Slice => {
                    if args().filter_map(|a| self.kind(a)).all(|k| k == Kind::Slice) { of } else { Kind::Unknown }
                }
                _ if ALONG.contains(&method) && of == Kind::Slice => {
                    let dim = c.arguments.find_argument_value("dim", 0);
                    if dim.is_some_and(|d| !is_zero(d) && !d.is_none_literal_expr()) {
                        Kind::Slice
                    } else {
                        Kind::Unknown
                    }
                }
                _ => Kind::Unknown,
            });
        }
        let kinds: Vec<Kind> = args().filter_map(|a| self.kind(a)).collect();
        let per_sample = !kinds.is_empty() && kinds.iter().all(|k| *k == Kind::Slice);
        if let Some(q) = q.as_deref() {
            // A library's function: per sample only where known to be (`F.relu(x)`,
            // `torch.argmax(x, dim=1)`); `torch.cat((a, b))` would interleave the slices,
            // `torch.sum(x, dim=0)` reduce them.
            let along = |pos| c.arguments.find_argument_value("dim", pos).is_some_and(|d| !is_zero(d));
            let known = match (q.strip_prefix("torch.nn.functional."), q.strip_prefix("torch.")) {
                (Some(f), _) if ALONG.contains(&f) => along(1),
                (Some(_), _) => !c.arguments.find_keyword("dim").is_some_and(|k| is_zero(&k.value)),
                (None, Some(f)) if ALONG.contains(&f) => along(1),
                (None, Some(f)) => ELEMENTWISE.contains(&f),
                _ => false,
            };
            return (!kinds.is_empty()).then_some(if per_sample && known { Kind::Slice } else { Kind::Unknown });
        }
        // Another call of the slice (the model's forward, a function of the program): per
        // sample along dim 0, as the split itself assumes of the model. A reduced value passed
        // on is a person's.
        (!kinds.is_empty()).then_some(if per_sample { Kind::Slice } else { Kind::Unknown })
    }

    /// The expressions of `e` (of kind `k`) to wrap to make it global: `e` itself, or the
    /// value under `.cpu()`/`.detach()` (gathered on the chip, then moved); `None` when it
    /// cannot be made global.
    fn wraps(&self, e: &Expr, k: Kind) -> Option<Vec<(TextRange, &'static str)>> {
        if let Expr::Call(c) = e
            && let Expr::Attribute(m) = &*c.func
            && KEEPING.contains(&m.attr.id.as_str())
            && self.qualified(&c.func).is_none()
            && self.kind(&m.value) == Some(k)
        {
            return self.wraps(&m.value, k);
        }
        Some(vec![(e.range(), k.helper()?)])
    }

    /// The values `e` shows (a `print`'s or a logger's arguments, an f-string's fields) that are
    /// computed from a split batch, outermost first.
    fn shown<'e>(&self, e: &'e Expr, out: &mut Vec<&'e Expr>) {
        match e {
            Expr::FString(f) => {
                for part in f.value.elements() {
                    if let ast::InterpolatedStringElement::Interpolation(i) = part {
                        self.shown(&i.expression, out);
                    }
                }
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|x| self.shown(x, out)),
            Expr::List(l) => l.elts.iter().for_each(|x| self.shown(x, out)),
            Expr::BinOp(b) if self.kind(e) == Some(Kind::Unknown) => {
                // `loss_sum / total`: each operand made global, the quotient is.
                self.shown(&b.left, out);
                self.shown(&b.right, out);
            }
            _ if self.kind(e).is_some() => out.push(e),
            _ => {}
        }
    }

    /// The reads in `e`, as one [`SliceRead`] at the first (a value's read rather than the
    /// `print` showing it).
    fn read(&mut self, e: &'x Expr) {
        let (mut first, mut shown_at) = (None, None);
        let mut wraps = Some(Vec::new());
        let mut visit = |x: &'x Expr| {
            let Expr::Call(c) = x else { return };
            let add = |wraps: &mut Option<Vec<_>>, w: Option<Vec<(TextRange, &'static str)>>| match (wraps.as_mut(), w)
            {
                (Some(all), Some(w)) => all.extend(w),
                _ => *wraps = None,
            };
            if let Some(value) = self.read_value(c)
                && let Some(k) = self.kind(value)
            {
                first.get_or_insert(x);
                add(&mut wraps, self.wraps(value, k));
                return;
            }
            let show = matches!(&*c.func, Expr::Attribute(m) if LOG_METHODS.contains(&m.attr.id.as_str()))
                || self.calls_builtin(c, &["print"]);
            if show {
                let mut values = Vec::new();
                c.arguments
                    .args
                    .iter()
                    .chain(c.arguments.keywords.iter().map(|k| &k.value))
                    .for_each(|a| self.shown(a, &mut values));
                if !values.is_empty() {
                    shown_at.get_or_insert(x);
                }
                for v in values {
                    let k = self.kind(v).unwrap_or(Kind::Unknown);
                    add(&mut wraps, self.wraps(v, k));
                }
            }
        };
        Finder(&mut visit).visit_expr(e);
        if let Some(at) = first.or(shown_at) {
            if let Some(w) = wraps.as_mut() {
                w.sort_by_key(|(range, _)| range.start());
            }
            self.reads.push(SliceRead { at, wraps });
        }
    }

    /// `scheduler.step(val_loss)`, `early_stop(acc)`: a mean or a sum handed to the program's
    /// own code in a statement whose result is dropped (so it cannot flow back into `backward`)
    /// is read there, and made global. Not a module's function (`torch.*`, a logger's methods
    /// and containers are read or followed elsewhere).
    fn handed_over(&mut self, call: &'x ast::ExprCall) {
        let callee = match &*call.func {
            Expr::Attribute(m) if self.kind(&m.value).is_none() => m.attr.id.as_str(),
            Expr::Name(f) => f.id.as_str(),
            _ => return,
        };
        if self.qualified(&call.func).is_some()
            || self.read_value(call).is_some()
            || [COLLECTING, LOG_METHODS, GLOBAL_HELPERS, &["print", "backward"]].iter().any(|l| l.contains(&callee))
        {
            return;
        }
        let mut wraps = Vec::new();
        for a in call.arguments.args.iter().chain(call.arguments.keywords.iter().map(|k| &k.value)) {
            if let Some(k @ (Kind::Mean | Kind::Sum)) = self.kind(a) {
                wraps.extend(self.wraps(a, k).into_iter().flatten());
            }
        }
        if !wraps.is_empty() {
            self.reads.push(SliceRead { at: &call.func, wraps: Some(wraps) });
        }
    }

    fn bind(&mut self, target: &Expr, kind: Option<Kind>) {
        match target {
            Expr::Name(n) => match kind {
                Some(k) => {
                    self.tainted.insert(n.id.to_string(), k);
                }
                None => {
                    self.tainted.remove(n.id.as_str());
                }
            },
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bind(e, kind)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.bind(e, kind)),
            Expr::Starred(s) => self.bind(&s.value, kind),
            _ => {}
        }
    }

    /// `a, b = x, y`: each name what its own value is.
    fn bind_assigned(&mut self, target: &Expr, value: &Expr) {
        match (target, value) {
            (Expr::Tuple(t), Expr::Tuple(v))
                if t.elts.len() == v.elts.len() && !v.elts.iter().any(Expr::is_starred_expr) =>
            {
                let kinds: Vec<_> = v.elts.iter().map(|e| self.kind(e)).collect();
                t.elts.iter().zip(kinds).for_each(|(t, k)| self.bind(t, k));
            }
            _ => {
                let global = matches!(value, Expr::Call(c) if matches!(&*c.func, Expr::Name(f) if GLOBAL_HELPERS.contains(&f.id.as_str())));
                let kind = if global { None } else { self.kind(value) };
                self.bind(target, kind);
            }
        }
    }

    fn body(&mut self, body: &'x [Stmt]) {
        for stmt in body {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &'x Stmt) {
        match stmt {
            Stmt::Expr(e) => {
                self.read(&e.value);
                let Expr::Call(call) = &*e.value else { return };
                self.handed_over(call);
                let first = call.arguments.args.first();
                let name = |e: Option<&Expr>| match e {
                    Some(Expr::Name(n)) => Some(n.id.to_string()),
                    _ => None,
                };
                let callee = self.qualified(&call.func);
                if callee.as_deref().is_some_and(|q| SPLITS.contains(&q))
                    && let Some(n) = name(first)
                {
                    // Only a split TPU228 converts (a batch on dim 0) gives each process a slice.
                    let spec = call.arguments.find_argument_value("partition_spec", 2).map(|s| &self.text[s.range()]);
                    if crate::migrate::rules::template::arg_matches(spec, &[Some("$dim0_only".to_string())]) {
                        self.tainted.insert(n, Kind::Slice);
                    }
                } else if callee.as_deref() == Some("torch.distributed.all_reduce")
                    && let Some(n) = name(first)
                {
                    self.tainted.remove(&n);
                } else if let Expr::Attribute(m) = &*call.func {
                    let receiver = name(Some(&m.value));
                    let method = m.attr.id.as_str();
                    if method == "backward"
                        && let Some(n) = receiver
                    {
                        self.tainted.remove(&n);
                    } else if COLLECTING.contains(&method)
                        && let Some(n) = receiver
                    {
                        // `predictions.append(predicted)`: each batch's values made global as they
                        // are kept (a `torch.cat` of several batches' slices would interleave them).
                        let value = call.arguments.args.last().filter(|_| matches!(method, "append" | "insert"));
                        match value.and_then(|v| Some((v, self.kind(v)?))) {
                            Some((v, k)) if kept_global(v, k) => {
                                self.reads.push(SliceRead { at: v, wraps: self.wraps(v, k) });
                            }
                            _ if call.arguments.args.iter().any(|a| self.kind(a).is_some()) => {
                                self.tainted.insert(n, Kind::Unknown);
                            }
                            _ => {}
                        }
                    }
                }
            }
            Stmt::Assign(a) => {
                self.read(&a.value);
                a.targets.iter().for_each(|t| self.bind_assigned(t, &a.value));
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    self.read(v);
                    self.bind_assigned(&a.target, v);
                }
            }
            Stmt::AugAssign(a) => {
                self.read(&a.value);
                let Some(k) = self.kind(&a.value) else { return };
                let Expr::Name(n) = &*a.target else { return self.bind(&a.target, Some(Kind::Unknown)) };
                if k == Kind::Size && a.op == ast::Operator::Add && !self.tainted.contains_key(n.id.as_str()) {
                    // `total += y.size(0)`: a count of samples, made global where it is counted.
                    self.reads.push(SliceRead { at: &a.value, wraps: self.wraps(&a.value, k) });
                    return;
                }
                let before = self.tainted.get(n.id.as_str()).copied();
                let kind = if a.op == ast::Operator::Add { Kind::accumulate(before, k) } else { Kind::Unknown };
                self.tainted.insert(n.id.to_string(), kind);
            }
            Stmt::For(f) => {
                self.read(&f.iter);
                // `for x, y in loader` / `for i, (x, y) in enumerate(loader)` over a sharded loader.
                let (iter, target) = match (&*f.iter, &*f.target) {
                    (Expr::Call(c), Expr::Tuple(t))
                        if matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "enumerate")
                            && c.arguments.args.len() == 1
                            && t.elts.len() == 2 =>
                    {
                        self.bind(&t.elts[0], None);
                        (&c.arguments.args[0], &t.elts[1])
                    }
                    _ => (&*f.iter, &*f.target),
                };
                let sharded = is_sharded_loader(iter, self.sem, self.scope)
                    || matches!(self.held.get(&self.text[iter.range()]), Some(Held::ShardedLoader));
                // Only where the file builds the sharding, so `torchtpu_shard_batch` (whose
                // split the global helpers read) is this file's.
                let sharded =
                    sharded && ["ShardingSpec(", "torchtpu_batch_sharding("].iter().any(|n| self.text.contains(n));
                let kind = if sharded { Some(Kind::Slice) } else { self.kind(&f.iter).map(|_| Kind::Unknown) };
                self.bind(target, kind);
                self.body(&f.body);
                self.body(&f.orelse);
            }
            Stmt::While(w) => {
                self.read(&w.test);
                self.body(&w.body);
                self.body(&w.orelse);
            }
            Stmt::If(i) => {
                self.read(&i.test);
                self.body(&i.body);
                for clause in &i.elif_else_clauses {
                    if let Some(test) = &clause.test {
                        self.read(test);
                    }
                    self.body(&clause.body);
                }
            }
            Stmt::With(w) => {
                for item in &w.items {
                    self.read(&item.context_expr);
                }
                self.body(&w.body);
            }
            Stmt::Try(t) => {
                self.body(&t.body);
                for handler in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = handler;
                    self.body(&h.body);
                }
                self.body(&t.orelse);
                self.body(&t.finalbody);
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    self.read(v);
                    if let Some(k) = self.kind(v) {
                        self.returns = Some(match self.returns {
                            Some(before) if before != k => Kind::Unknown,
                            _ => k,
                        });
                    }
                }
            }
            _ => {}
        }
    }
}

/// `l op r` where neither is per-sample: the kind whose global value is the same expression of
/// the globals (`loss + aux`, `loss * 0.5`, `correct / 2`), `Some(None)` when there is none, and
/// `None` when neither side is computed from the slice.
fn linear(l: Option<Kind>, op: ast::Operator, r: Option<Kind>) -> Option<Option<Kind>> {
    use ast::Operator::{Add, Div, Mult, Sub};
    Some(match (l, r) {
        (None, None) => return None,
        // Sums of the processes' values: the same sums of their means or sums.
        (Some(a), Some(b)) if a == b && matches!(op, Add | Sub) => Some(a),
        // A mean shifted or scaled by what every process has; a sum only scaled.
        (Some(Kind::Mean), None) if matches!(op, Add | Sub | Mult | Div) => Some(Kind::Mean),
        (None, Some(Kind::Mean)) if matches!(op, Add | Sub | Mult) => Some(Kind::Mean),
        (Some(k @ (Kind::Sum | Kind::Size)), None) if matches!(op, Mult | Div) => Some(k),
        (None, Some(k @ (Kind::Sum | Kind::Size))) if op == Mult => Some(k),
        _ => None,
    })
}

/// Whether a value put into a container is made global there: per-sample values (gathered per
/// batch), and a detached mean or sum (a loss kept for logging; one kept with its graph may
/// still be backpropagated).
fn kept_global(v: &Expr, k: Kind) -> bool {
    let detached =
        matches!(v, Expr::Call(c) if matches!(&*c.func, Expr::Attribute(m) if m.attr.id.as_str() == "detach"));
    k == Kind::Slice || detached && matches!(k, Kind::Mean | Kind::Sum)
}

/// A full reduction (`.mean()`, `.sum()`) of a value of kind `of`.
fn reduced(of: Kind, mean: bool) -> Kind {
    match of {
        Kind::Slice if mean => Kind::Mean,
        Kind::Slice => Kind::Sum,
        Kind::Mean | Kind::Sum => of, // of a scalar: itself
        _ => Kind::Unknown,
    }
}

/// What a loss (a functional call, or a loss module's construction) computes over the slice:
/// a mean unless `reduction` says otherwise. More than `positional` positional arguments, class
/// weights or the legacy `size_average`/`reduce` make it a person's.
fn loss_kind(call: &ast::ExprCall, positional: usize) -> Kind {
    let args = &call.arguments;
    if args.args.len() > positional
        || args.args.iter().any(Expr::is_starred_expr)
        || args.keywords.iter().any(|k| {
            k.arg.as_ref().is_none_or(|a| matches!(a.as_str(), "weight" | "pos_weight" | "size_average" | "reduce"))
        })
    {
        return Kind::Unknown;
    }
    match args.find_keyword("reduction").map(|k| &k.value) {
        None => Kind::Mean,
        Some(Expr::StringLiteral(s)) => match s.value.to_str() {
            "mean" | "batchmean" => Kind::Mean,
            "sum" => Kind::Sum,
            "none" => Kind::Slice,
            _ => Kind::Unknown,
        },
        Some(_) => Kind::Unknown,
    }
}

fn is_zero(e: &Expr) -> bool {
    matches!(e, Expr::NumberLiteral(n) if matches!(&n.value, ast::Number::Int(i) if i.as_u8() == Some(0)))
}

/// Calls `f` on every expression a walk reaches (not into nested scopes' bodies: those are
/// expressions only here, lambdas and comprehensions, read as part of their statement).
struct Finder<'f, 'x>(&'f mut dyn FnMut(&'x Expr));

impl<'x> ruff_python_ast::visitor::Visitor<'x> for Finder<'_, 'x> {
    fn visit_expr(&mut self, e: &'x Expr) {
        (self.0)(e);
        ruff_python_ast::visitor::walk_expr(self, e);
    }
}

/// Every function body of the module (methods and nested functions too), with its scope.
fn bodies<'a>(body: &'a [Stmt], sem: &Semantic, out: &mut Vec<(&'a ast::StmtFunctionDef, ScopeId)>) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(f) => {
                if let Some(scope) = sem.scope_of_node(f.start()) {
                    out.push((f, scope));
                }
                bodies(&f.body, sem, out);
            }
            Stmt::ClassDef(c) => bodies(&c.body, sem, out),
            Stmt::If(i) => {
                bodies(&i.body, sem, out);
                i.elif_else_clauses.iter().for_each(|c| bodies(&c.body, sem, out));
            }
            _ => {}
        }
    }
}

/// What the file keeps in a name or attribute that matters to a split batch's values.
#[derive(Debug, Clone, Copy)]
enum Held {
    /// A loss module (`criterion = nn.CrossEntropyLoss()`), with what calling it computes.
    Loss(Kind),
    /// A loader whose batches are split (`pl.MpDeviceLoader(..., input_sharding=...)`, or the
    /// helper TPU211 makes of it): each batch it gives is this process's slice.
    ShardedLoader,
}

/// A loader whose batches are split: `pl.MpDeviceLoader(loader, device, input_sharding=s)`, or
/// `torchtpu_device_loader(loader, device, sharding)`.
fn is_sharded_loader(e: &Expr, sem: &Semantic, scope: ScopeId) -> bool {
    let Expr::Call(c) = e else { return false };
    let passed = |e: Option<&Expr>| e.is_some_and(|e| !e.is_none_literal_expr());
    match &*c.func {
        Expr::Name(f) if f.id.as_str() == "torchtpu_device_loader" => {
            passed(c.arguments.find_argument_value("sharding", 2))
        }
        func => {
            sem.qualified_name(func, scope)
                .is_some_and(|q| q.name == "torch_xla.distributed.parallel_loader.MpDeviceLoader")
                && passed(c.arguments.find_keyword("input_sharding").map(|k| &k.value))
        }
    }
}

/// Loss modules and sharded loaders the file builds (`self.loss_fn = torch.nn.MSELoss()`,
/// `self.loader = pl.MpDeviceLoader(..., input_sharding=...)`), by the spelling of what holds
/// them.
fn held(body: &[Stmt], sem: &Semantic, scope: ScopeId, text: &str, out: &mut FxHashMap<String, Held>) {
    for stmt in body {
        match stmt {
            Stmt::Assign(a) => {
                let Expr::Call(c) = &*a.value else { continue };
                let loss = sem.qualified_name(&c.func, scope).is_some_and(|q| {
                    q.name
                        .strip_prefix("torch.nn.")
                        .is_some_and(|n| n.rsplit('.').next().unwrap_or(n).ends_with("Loss"))
                });
                let what = if loss {
                    Held::Loss(loss_kind(c, 0))
                } else if is_sharded_loader(&a.value, sem, scope) {
                    Held::ShardedLoader
                } else {
                    continue;
                };
                for t in &a.targets {
                    out.insert(text[t.range()].to_string(), what);
                }
            }
            Stmt::If(i) => {
                held(&i.body, sem, scope, text, out);
                i.elif_else_clauses.iter().for_each(|c| held(&c.body, sem, scope, text, out));
            }
            Stmt::With(w) => held(&w.body, sem, scope, text, out),
            Stmt::Try(t) => held(&t.body, sem, scope, text, out),
            _ => {}
        }
    }
}

/// The reads (TPU234) of values computed from a split batch, in a file that splits one: each
/// statement's at its first, in source order.
fn find_slice_reads<'x>(module: &'x ast::ModModule, sem: &Semantic, text: &str) -> Vec<SliceRead<'x>> {
    if !["mark_sharding", SHARD_HELPER, "input_sharding", "torchtpu_device_loader"].iter().any(|n| text.contains(n)) {
        return Vec::new();
    }
    let mut functions = Vec::new();
    bodies(&module.body, sem, &mut functions);
    let mut kept = FxHashMap::default();
    held(&module.body, sem, 0, text, &mut kept);
    for (f, scope) in &functions {
        held(&f.body, sem, *scope, text, &mut kept);
    }
    let flow = |scope, returning: &FxHashMap<String, Kind>, body: &'x [Stmt]| {
        let mut flow = SliceFlow {
            sem,
            text,
            scope,
            returning,
            held: &kept,
            tainted: FxHashMap::default(),
            returns: None,
            reads: Vec::new(),
        };
        flow.body(body);
        (flow.returns, flow.reads)
    };
    // Which functions return a slice's value, to a fixed point (a helper returning the split
    // batch, a method returning a value computed from it).
    let mut returning = FxHashMap::default();
    loop {
        let found: FxHashMap<String, Kind> = functions
            .iter()
            .filter_map(|(f, scope)| flow(*scope, &returning, &f.body).0.map(|k| (f.name.id.to_string(), k)))
            .collect();
        if found == returning {
            break;
        }
        returning = found;
    }
    let mut reads = flow(0, &returning, &module.body).1;
    for (f, scope) in &functions {
        reads.extend(flow(*scope, &returning, &f.body).1);
    }
    reads.sort_by_key(|r| r.at.start());
    reads.dedup_by_key(|r| r.at.range());
    reads
}

impl<'a> Checker<'a> {
    /// The reads of a split batch's values in this file ([`find_slice_reads`]), found once;
    /// not those a `# noqa: TPU234` marks global by other means, which keep no split waiting.
    pub(super) fn slice_reads(&self) -> &[SliceRead<'a>] {
        self.slice_reads.get_or_init(|| {
            let reads = find_slice_reads(self.parsed_tokens.syntax(), self.sem, self.text);
            // Most files read no split batch: no second scan of their comments for `# noqa`.
            let Some(rule) = self.rules.builtin(Builtin::SpmdSliceRead).filter(|_| !reads.is_empty()) else {
                return reads;
            };
            let noqa = super::noqa::Suppressions::new(self.text, self.parsed_tokens);
            let code = &self.rule(rule).code;
            reads.into_iter().filter(|r| !noqa.covers(self.text, r.at.range(), code)).collect()
        })
    }

    /// TPU234 at each read [`find_slice_reads`] found, with the fix that wraps each value read
    /// in the helper making it global where it can be.
    pub(super) fn report_slice_reads(&self, diagnostics: &mut Vec<Diagnostic>) {
        let Some(rule) = self.rules.builtin(Builtin::SpmdSliceRead) else { return };
        let spec = self.rule(rule).fixes.first();
        for read in self.slice_reads() {
            let message = self.message(rule, &self.text[read.at.range()]);
            let (mut fix, mut note) = (None, None);
            if let (Some(spec), Some(wraps)) = (spec, &read.wraps) {
                let mut edits = Vec::new();
                for (range, helper) in wraps {
                    edits.push(Edit::insert(range.start(), format!("{helper}(")));
                    edits.push(Edit::insert(range.end(), ")"));
                }
                let mut made = Fix { safety: spec.safety, edits, deletes: vec![], imports: vec![], helpers: vec![] };
                let site =
                    super::Site { rule, target: None, expr: read.at, call: None, spelled: String::new(), callee: None };
                match self.define_helpers(&site, self.rule(rule), spec, &Default::default(), &mut made) {
                    Ok(()) => (fix, note) = (Some(made), spec.note.clone()),
                    Err(reason) => note = Some(format!("not converted: {reason}")),
                }
            }
            diagnostics.push(Diagnostic { rule, range: read.at.range(), message, note, fix });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each read of `src` as its text, with the text of what is wrapped in which helper, or
    /// `None` where a person must make it global.
    fn reads(src: &str) -> Vec<(String, Option<Vec<String>>)> {
        let parsed = ruff_python_parser::parse_module(src).expect("parses");
        let module = parsed.syntax();
        let sem = Semantic::build(module);
        find_slice_reads(module, &sem, src)
            .into_iter()
            .map(|r| {
                let wraps = r.wraps.map(|w| w.iter().map(|(at, h)| format!("{h}({})", &src[*at])).collect());
                (src[r.at.range()].to_string(), wraps)
            })
            .collect()
    }

    const PRELUDE: &str = "import torch\nimport torch.nn.functional as F\nimport torch_xla.distributed.spmd as xs\n";

    fn program(body: &str) -> String {
        format!(
            "{PRELUDE}def f(model, x, y, mesh):\n    xs.mark_sharding(x, mesh, (\"data\", None))\n    xs.mark_sharding(y, mesh, (\"data\",))\n{body}"
        )
    }

    fn wrapped(body: &str) -> Vec<Vec<String>> {
        reads(&program(body)).into_iter().map(|(at, w)| w.unwrap_or_else(|| panic!("{at} not convertible"))).collect()
    }

    #[test]
    fn means_sums_sizes_and_samples_are_made_global_where_read() {
        assert_eq!(
            wrapped("    print(F.softmax(model(x), dim=-1).tolist(), torch.argmax(model(x), dim=1).tolist())\n"),
            vec![vec![
                "torchtpu_global_cat(F.softmax(model(x), dim=-1))".to_string(),
                "torchtpu_global_cat(torch.argmax(model(x), dim=1))".to_string()
            ]]
        );
        let got = wrapped(
            "    logits = model(x)\n    loss = F.cross_entropy(logits, y)\n    print(loss.item())\n    \
             correct = (logits.argmax(dim=1) == y).sum()\n    total = 0\n    total += y.size(0)\n    \
             print(f\"{correct.item()} of {total} {x.shape[0]}\")\n    return logits.argmax(-1).cpu().tolist()\n",
        );
        assert_eq!(
            got,
            vec![
                vec!["torchtpu_global_mean(loss)".to_string()],
                vec!["torchtpu_global_sum(y.size(0))".to_string()],
                vec!["torchtpu_global_sum(correct)".to_string(), "torchtpu_global_sum(x.shape[0])".to_string()],
                vec!["torchtpu_global_cat(logits.argmax(-1))".to_string()],
            ]
        );
    }

    #[test]
    fn a_loss_module_and_a_kept_batch_are_followed() {
        let src = format!(
            "{PRELUDE}criterion = torch.nn.CrossEntropyLoss(reduction=\"sum\")\n\
             def f(model, x, y, mesh, preds):\n    xs.mark_sharding(x, mesh, (\"data\", None))\n    \
             out = model(x)\n    preds.append(out.argmax(1))\n    print(float(criterion(out, y)))\n"
        );
        let got: Vec<_> = reads(&src).into_iter().map(|(_, w)| w.expect("convertible")).collect();
        assert_eq!(
            got,
            vec![
                vec!["torchtpu_global_cat(out.argmax(1))".to_string()],
                vec!["torchtpu_global_sum(criterion(out, y))".to_string()]
            ]
        );
    }

    #[test]
    fn a_mean_handed_to_the_programs_code_is_read_there() {
        let got = wrapped(
            "    val_loss = F.mse_loss(model(x), y)\n    scheduler.step(val_loss)\n    stop(metric=val_loss)\n",
        );
        assert_eq!(got, vec![vec!["torchtpu_global_mean(val_loss)".to_string()]; 2]);
        // Not a module's function, nor what `backward` gets.
        assert_eq!(
            reads(&program("    loss = F.mse_loss(model(x), y)\n    torch.save(loss, p)\n    loss.backward()\n")),
            vec![]
        );
    }

    #[test]
    fn the_batches_of_a_sharded_loader_are_slices() {
        let src = format!(
            "{PRELUDE}import torch_xla.distributed.parallel_loader as pl\n\
             class T:\n    def __init__(self, loader, device, spec):\n        \
             self.loader = pl.MpDeviceLoader(loader, device, input_sharding=xs.ShardingSpec(spec, (0, None)))\n\n    \
             def evaluate(self, model):\n        correct = 0\n        \
             for i, batch in enumerate(self.loader):\n            \
             correct += (model(batch[\"x\"]).argmax(-1) == batch[\"y\"]).sum().item()\n        \
             print(i, correct)\n"
        );
        let got: Vec<_> = reads(&src).into_iter().map(|(_, w)| w.expect("convertible")).collect();
        assert_eq!(
            got,
            vec![vec!["torchtpu_global_sum((model(batch[\"x\"]).argmax(-1) == batch[\"y\"]).sum())".to_string()]]
        );
        // A sharding the file does not build splits with another file's helper: not followed.
        assert_eq!(reads(&src.replace("xs.ShardingSpec(spec, (0, None))", "spec")), vec![]);
        let migrated = "def f(model, loader, device, mesh):\n    sharding = torchtpu_batch_sharding(mesh, (0, None))\n    \
                        for x, y in torchtpu_device_loader(loader, device, sharding):\n        print(model(x).mean().item())\n";
        let got: Vec<_> = reads(migrated).into_iter().map(|(_, w)| w.expect("convertible")).collect();
        assert_eq!(got, vec![vec!["torchtpu_global_mean(model(x).mean())".to_string()]]);
    }

    #[test]
    fn what_cannot_be_told_is_a_persons() {
        for body in [
            "    print(model(x)[0])\n",                                              // one sample
            "    print(model(x).mean(dim=0).tolist())\n",                            // a reduction along dim 0
            "    print(F.cross_entropy(model(x), y, weight=w).item())\n",            // a weighted mean
            "    loss = F.mse_loss(model(x), y)\n    print((loss * loss).item())\n", // not linear
            "    n = y.size(0) + 1\n    print(n)\n",                                 // a size shifted
            "    print(torch.cat([model(x), model(x)]).tolist())\n",                 // slices interleaved
            "    print(torch.cat((model(x), model(x))).tolist())\n",
            "    print(torch.sum(model(x), dim=0).tolist())\n",
            "    print(torch.softmax(model(x), 0).tolist())\n",
        ] {
            let got = reads(&program(body));
            assert!(got.iter().any(|(_, w)| w.is_none()), "{body}: {got:?}");
        }
    }

    #[test]
    fn global_values_and_unconvertible_splits_are_not_reads() {
        let body = "    loss = F.cross_entropy(model(x), y)\n    loss.backward()\n    print(loss.item())\n    \
                    print(torchtpu_global_mean(loss).item())\n";
        assert_eq!(reads(&program(body)), vec![]);
        // A split along dim 1 is not converted, so nothing is read from a slice.
        let src = format!(
            "{PRELUDE}def f(model, x, mesh):\n    xs.mark_sharding(x, mesh, (None, \"data\"))\n    print(model(x).sum().item())\n"
        );
        assert_eq!(reads(&src), vec![]);
    }
}
