//! Call signatures, argument binding and replacement templates.
//!
//! A rule declares the torch_xla signature (`value, dim=0, groups=None`); a
//! call's arguments are bound to it the way Python binds them. Templates then
//! name parameters:
//!
//! | placeholder        | expands to                                                    |
//! |--------------------|---------------------------------------------------------------|
//! | `{p}`              | the argument's source text, else the declared default         |
//! | `{p:kw}`           | `, p=<text>` when the argument was passed, else nothing       |
//! | `{p:kw=name}`      | `, name=<text>` when passed, else nothing                     |
//! | `{p:opt}`          | the argument's source text when it was passed, else nothing   |
//! | `{p:splat}`        | a tuple/list literal's items, else `*<text>`; nothing if omitted |
//! | `{p:rest}`         | `, ` and `{p:splat}` when that is not empty (more positional arguments) |
//! | `{p:callee}`       | the argument as something to call: `(<text>)` unless it is a name, attribute, call or subscript |
//! | `{p:operand}`      | the argument as an operand of `*`: as `{p:callee}`, and a number literal is bare too |
//! | `{*p}`             | the variadic arguments bound to `*p`, comma-separated        |
//! | `{**p}`            | `, k=v` for each keyword collected by `**p`                   |
//! | `{@module.path}`   | a name bound to that module (an import is added if needed)    |
//! | `{$target}`        | the rule's per-name target (`match.call` given as a map)      |
//! | `{$args}`          | the call's original argument list, verbatim                   |
//! | `{$name}`          | (reference rules) the matched name as written                 |
//! | `{$receiver}`      | (method rules) the object the method is called on, when it is a bare name |
//! | `{$assign}`        | (statements) `target = ` when the call is assigned, `return ` when returned, else empty |
//! | `{$fresh:name}`    | `name`, or `name_2`… if the file already uses it              |
//! | `{$process.rank}`  | the rank as the framework running the match knows it (`self.global_rank` in a Lightning step); `{$process.world_size}` likewise |
//! | `{{` / `}}`        | literal braces                                                |
//!
//! An argument the call passes but the template does not carry over makes the
//! fix unavailable (unless the fix lists it under `drop`): never guess.

use std::collections::BTreeMap;

use anyhow::bail;
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Normal,
    KeywordOnly,
    VarArgs,
    VarKeywords,
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub default: Option<Template>,
    pub kind: ParamKind,
}

#[derive(Debug, Clone)]
pub struct Signature {
    pub params: Vec<Param>,
}

impl Signature {
    /// Parse a Python-style parameter list: `a, b=1, *args, c=None, **kw`.
    pub fn parse(text: &str) -> anyhow::Result<Signature> {
        let mut params = Vec::new();
        let mut keyword_only = false;
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            if part == "*" {
                keyword_only = true;
                continue;
            }
            let (kind, rest) = if let Some(rest) = part.strip_prefix("**") {
                (ParamKind::VarKeywords, rest)
            } else if let Some(rest) = part.strip_prefix('*') {
                keyword_only = true;
                (ParamKind::VarArgs, rest)
            } else if keyword_only {
                (ParamKind::KeywordOnly, part)
            } else {
                (ParamKind::Normal, part)
            };
            let (name, default) = match rest.split_once('=') {
                // Defaults are Python source; only `{@module}` placeholders are expanded in them.
                Some((n, d)) if d.contains("{@") => (n.trim(), Some(Template::parse(d.trim())?)),
                Some((n, d)) => (n.trim(), Some(Template::literal(d.trim()))),
                None => (rest.trim(), None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                bail!("bad parameter `{part}` in signature `{text}`");
            }
            params.push(Param { name: name.to_string(), default, kind });
        }
        Ok(Signature { params })
    }

    pub fn has(&self, name: &str) -> bool {
        self.params.iter().any(|p| p.name == name)
    }

    /// Bind a call's arguments to parameters, as Python would.
    pub fn bind<'a>(&self, call: &'a ExprCall) -> Result<Bound<'a>, String> {
        let mut bound = Bound::default();
        let mut positional = self.params.iter().filter(|p| matches!(p.kind, ParamKind::Normal | ParamKind::VarArgs));
        let mut current_var: Option<&Param> = None;
        for arg in call.arguments.args.iter() {
            if let Expr::Starred(_) = arg {
                return Err("the call unpacks `*args`; rewrite it by hand".into());
            }
            let param = match current_var {
                Some(p) => p,
                None => positional.next().ok_or("the call passes more positional arguments than the API takes")?,
            };
            if param.kind == ParamKind::VarArgs {
                current_var = Some(param);
                bound.varargs.entry(param.name.clone()).or_default().push(arg);
            } else {
                bound.values.insert(param.name.clone(), arg);
            }
        }
        for kw in call.arguments.keywords.iter() {
            let Some(name) = &kw.arg else {
                return Err("the call unpacks `**kwargs`; rewrite it by hand".into());
            };
            let name = name.id.as_str();
            match self
                .params
                .iter()
                .find(|p| p.name == name && !matches!(p.kind, ParamKind::VarArgs | ParamKind::VarKeywords))
            {
                Some(_) if bound.values.contains_key(name) => {
                    return Err(format!("argument `{name}` is passed twice"));
                }
                Some(_) => {
                    bound.values.insert(name.to_string(), &kw.value);
                    bound.keyword_ranges.insert(name.to_string(), kw.range());
                }
                None => match self.params.iter().find(|p| p.kind == ParamKind::VarKeywords) {
                    Some(var) => bound.kwargs.entry(var.name.clone()).or_default().push((name.to_string(), &kw.value)),
                    None => return Err(format!("keyword `{name}` is not part of the API's signature")),
                },
            }
        }
        Ok(bound)
    }

    pub fn default_of(&self, name: &str) -> Option<&Template> {
        self.params.iter().find(|p| p.name == name).and_then(|p| p.default.as_ref())
    }
}

/// Arguments bound to parameter names (ordered maps: messages must be deterministic).
#[derive(Debug, Default)]
pub struct Bound<'a> {
    pub values: BTreeMap<String, &'a Expr>,
    pub varargs: BTreeMap<String, Vec<&'a Expr>>,
    /// Keywords collected by a `**name` parameter.
    pub kwargs: BTreeMap<String, Vec<(String, &'a Expr)>>,
    /// For keyword arguments: the range of the whole `name=value`.
    pub keyword_ranges: BTreeMap<String, ruff_text_size::TextRange>,
}

impl Bound<'_> {
    pub fn is_passed(&self, name: &str) -> bool {
        self.values.contains_key(name) || self.varargs.get(name).is_some_and(|v| !v.is_empty())
    }

    pub fn passed_names(&self) -> impl Iterator<Item = &str> {
        self.values
            .keys()
            .chain(self.varargs.iter().filter(|(_, v)| !v.is_empty()).map(|(k, _)| k))
            .chain(self.kwargs.iter().filter(|(_, v)| !v.is_empty()).map(|(k, _)| k))
            .map(String::as_str)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Param(String),
    Keyword { param: String, rename: String },
    Optional(String),
    Splat(String),
    Rest(String),
    Callee(String),
    Operand(String),
    VarArgs(String),
    VarKeywords(String),
    Module(String),
    Target,
    Args,
    Name,
    Receiver,
    Assign,
    Fresh(String),
    Process(ProcessFact),
}

/// What a framework that set up this process knows about it (`{$process.rank}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessFact {
    Rank,
    WorldSize,
}

/// A parsed replacement template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    pub fn parse(text: &str) -> anyhow::Result<Template> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().is_some_and(|(_, n)| *n == '{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek().is_some_and(|(_, n)| *n == '}') => {
                    chars.next();
                    literal.push('}');
                }
                '{' => {
                    let Some(end) = text[i..].find('}') else { bail!("unclosed `{{` in template `{text}`") };
                    let inner = &text[i + 1..i + end];
                    while chars.peek().is_some_and(|(j, _)| *j <= i + end) {
                        chars.next();
                    }
                    if !literal.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut literal)));
                    }
                    pieces.push(
                        parse_placeholder(inner)
                            .ok_or_else(|| anyhow::anyhow!("bad placeholder `{{{inner}}}` in template `{text}`"))?,
                    );
                }
                '}' => bail!("stray `}}` in template `{text}` (write `}}}}`)"),
                _ => literal.push(c),
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Template { pieces })
    }

    pub fn literal(text: &str) -> Template {
        Template { pieces: vec![Piece::Text(text.to_string())] }
    }

    /// The text of a template without placeholders.
    pub fn as_literal(&self) -> Option<&str> {
        match self.pieces.as_slice() {
            [Piece::Text(t)] => Some(t),
            _ => None,
        }
    }

    /// Whether the template uses `{$assign}` (it may then replace an assignment).
    pub fn uses_assign(&self) -> bool {
        self.pieces.contains(&Piece::Assign)
    }

    /// Parameter names the template refers to.
    pub fn params(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Param(n) | Piece::VarArgs(n) | Piece::VarKeywords(n) => Some(n.as_str()),
            Piece::Keyword { param, .. }
            | Piece::Optional(param)
            | Piece::Splat(param)
            | Piece::Rest(param)
            | Piece::Callee(param)
            | Piece::Operand(param) => Some(param.as_str()),
            _ => None,
        })
    }

    /// Expand against a call's bound arguments.
    pub fn expand(&self, cx: &mut dyn ExpandContext) -> Result<String, String> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Param(name) => match cx.arg(name) {
                    Some(text) => out.push_str(&text),
                    None => match cx.default(name) {
                        Some(default) => out.push_str(&default.expand(cx)?),
                        None => return Err(format!("required argument `{name}` is missing")),
                    },
                },
                Piece::Keyword { param, rename } => {
                    if let Some(text) = cx.arg(param) {
                        out.push_str(&format!(", {rename}={text}"));
                    }
                }
                Piece::Optional(param) => {
                    if let Some(text) = cx.arg(param) {
                        out.push_str(&text);
                    }
                }
                Piece::Splat(param) => {
                    if let Some(text) = cx.arg(param) {
                        out.push_str(&splat(&text));
                    }
                }
                Piece::Rest(param) => {
                    if let Some(items) = cx.arg(param).map(|text| splat(&text)).filter(|items| !items.is_empty()) {
                        out.push_str(", ");
                        out.push_str(&items);
                    }
                }
                Piece::Callee(param) => match cx.arg(param) {
                    Some(text) => out.push_str(&callee(&text)),
                    None => return Err(format!("required argument `{param}` is missing")),
                },
                Piece::Operand(param) => match cx.arg(param) {
                    Some(text) if is_number(&text) => out.push_str(&text),
                    Some(text) => out.push_str(&callee(&text)),
                    None => return Err(format!("required argument `{param}` is missing")),
                },
                Piece::VarArgs(name) => out.push_str(&cx.varargs(name).join(", ")),
                Piece::VarKeywords(name) => {
                    for (k, v) in cx.kwargs(name) {
                        out.push_str(&format!(", {k}={v}"));
                    }
                }
                Piece::Module(module) => out.push_str(&cx.module(module)?),
                Piece::Target => {
                    out.push_str(cx.target().ok_or("this name has no automatic conversion (see the help)")?)
                }
                Piece::Args => out.push_str(&cx.all_args()),
                Piece::Name => out.push_str(&cx.name().ok_or("`{$name}` is only available for a matched name")?),
                Piece::Receiver => {
                    out.push_str(&cx.receiver().ok_or("the method is not called on a bare name (`loss.backward()`)")?)
                }
                Piece::Assign => out.push_str(&cx.assign().ok_or("`{$assign}` is only available in statements")?),
                Piece::Fresh(hint) => out.push_str(&cx.fresh(hint)),
                Piece::Process(fact) => out.push_str(&cx.process(*fact).ok_or(
                    "only converted when a framework has set up this process here (a Lightning hook, a \
                     Trainer's method or callback, code after `Accelerator()`)",
                )?),
            }
        }
        Ok(out)
    }
}

/// What a template needs from the place it is expanded in.
pub trait ExpandContext {
    fn arg(&mut self, name: &str) -> Option<String>;
    fn default(&self, name: &str) -> Option<Template>;
    fn varargs(&mut self, name: &str) -> Vec<String>;
    fn kwargs(&mut self, name: &str) -> Vec<(String, String)>;
    fn module(&mut self, module: &str) -> Result<String, String>;
    fn target(&self) -> Option<&str>;
    fn all_args(&self) -> String;
    /// The matched name as written (`TrainingArguments`, `transformers.TrainingArguments`).
    fn name(&self) -> Option<String> {
        None
    }
    /// The bare name a matched method is called on (`loss` of `loss.backward()`).
    fn receiver(&self) -> Option<String> {
        None
    }
    /// `target = ` when the matched call is the value of an assignment
    /// statement, `""` for an expression statement.
    fn assign(&self) -> Option<String> {
        None
    }
    /// A name that clashes with nothing in the file, stable within one fix.
    fn fresh(&mut self, hint: &str) -> String;
    /// The rank or world size as the framework that set up this process there knows it.
    fn process(&self, _fact: ProcessFact) -> Option<String> {
        None
    }
}

fn parse_placeholder(inner: &str) -> Option<Piece> {
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    if let Some(module) = inner.strip_prefix('@') {
        return module.split('.').all(ident).then(|| Piece::Module(module.to_string()));
    }
    if let Some(name) = inner.strip_prefix("**") {
        return ident(name).then(|| Piece::VarKeywords(name.to_string()));
    }
    if let Some(name) = inner.strip_prefix('*') {
        return ident(name).then(|| Piece::VarArgs(name.to_string()));
    }
    match inner {
        "$target" => return Some(Piece::Target),
        "$args" => return Some(Piece::Args),
        "$name" => return Some(Piece::Name),
        "$receiver" => return Some(Piece::Receiver),
        "$assign" => return Some(Piece::Assign),
        "$process.rank" => return Some(Piece::Process(ProcessFact::Rank)),
        "$process.world_size" => return Some(Piece::Process(ProcessFact::WorldSize)),
        _ => {}
    }
    if let Some(hint) = inner.strip_prefix("$fresh:") {
        return ident(hint).then(|| Piece::Fresh(hint.to_string()));
    }
    if let Some((param, spec)) = inner.split_once(':') {
        if spec == "opt" {
            return ident(param).then(|| Piece::Optional(param.to_string()));
        }
        if spec == "splat" {
            return ident(param).then(|| Piece::Splat(param.to_string()));
        }
        if spec == "rest" {
            return ident(param).then(|| Piece::Rest(param.to_string()));
        }
        if spec == "callee" {
            return ident(param).then(|| Piece::Callee(param.to_string()));
        }
        if spec == "operand" {
            return ident(param).then(|| Piece::Operand(param.to_string()));
        }
        let rename = match spec {
            "kw" => param,
            _ => spec.strip_prefix("kw=")?,
        };
        return (ident(param) && ident(rename))
            .then(|| Piece::Keyword { param: param.to_string(), rename: rename.to_string() });
    }
    ident(inner).then(|| Piece::Param(inner.to_string()))
}

/// The arguments a tuple or list literal spreads into (`(a, b)` → `a, b`);
/// any other expression is starred (`args` → `*args`).
fn splat(text: &str) -> String {
    let Ok(parsed) = ruff_python_parser::parse_expression(text) else { return format!("*{text}") };
    let elts = match parsed.expr() {
        Expr::Tuple(t) => &t.elts,
        Expr::List(l) => &l.elts,
        _ => return format!("*{text}"),
    };
    if elts.iter().any(Expr::is_starred_expr) {
        return format!("*{text}");
    }
    elts.iter().map(|e| &text[e.range()]).collect::<Vec<_>>().join(", ")
}

/// An expression placed before `(…)`: a lambda, conditional or operator
/// expression binds looser than a call (`lambda xs: xs[0](g)` calls `xs[0]`),
/// so it gets parentheses; names, attributes, calls, subscripts and text that
/// is already parenthesised stay as they are.
fn is_number(text: &str) -> bool {
    ruff_python_parser::parse_expression(text).is_ok_and(|p| p.expr().is_number_literal_expr())
}

fn callee(text: &str) -> String {
    let Ok(parsed) = ruff_python_parser::parse_expression(text) else { return format!("({text})") };
    let expr = parsed.expr();
    let bare = matches!(expr, Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_));
    // A parenthesised source keeps its parentheses outside the expression's range.
    if bare || expr.range().len() < ruff_text_size::TextSize::of(text.trim()) {
        text.to_string()
    } else {
        format!("({text})")
    }
}

/// Split on commas that are not inside brackets or quotes.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start, mut quote) = (0i32, 0usize, None::<char>);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Does an argument's source text satisfy a `when` entry? String literals
/// compare by value, so `'xla'` matches `"xla"`; `~` means "not passed",
/// `"*"` means "passed, whatever the value", `"$value"` means "passed,
/// and a value that is safe to evaluate more than once" (a literal other than
/// `None`, a name, an attribute or subscript of those), `"$int"` means
/// "an integer literal" (a count known without running the program), and
/// `"$name"` means "a name or attribute" (a reference, never a literal), `"$identifier"` a bare
/// name (one that can be rebound), `"$dim0_only"` a tuple/list literal splitting dim 0 only
/// (`("data", None)`), and `"$pure"` means
/// "calls nothing" (safe to evaluate on one rank only). For `*args`, every argument must match.
pub fn arg_matches(actual: Option<&str>, accepted: &[Option<String>]) -> bool {
    accepted.iter().any(|a| match (actual, a) {
        (None, None) => true,
        (Some(_), Some(expected)) if expected == "*" => true,
        (Some(actual), Some(expected)) if expected == "$value" => is_plain_value(actual),
        (Some(actual), Some(expected)) if expected == "$int" => is_int_literal(actual),
        (Some(actual), Some(expected)) if expected == "$name" => is_name(actual),
        (Some(actual), Some(expected)) if expected == "$identifier" => is_identifier(actual),
        (Some(actual), Some(expected)) if expected == "$dim0_only" => splits_dim0_only(actual),
        (Some(actual), Some(expected)) if expected == "$pure" => is_call_free(actual),
        (Some(actual), Some(expected)) if expected == "$list" => is_list(actual),
        (Some(actual), Some(expected)) if expected == "$str" => string_value(actual).is_some(),
        (Some(actual), Some(expected)) => {
            actual == expected
                || string_value(actual).is_some_and(|v| Some(v) == string_value(expected).or(Some(expected)))
        }
        _ => false,
    })
}

/// A list display or comprehension (`[p.grad for p in params]`): a list, whatever it holds.
fn is_list(text: &str) -> bool {
    ruff_python_parser::parse_expression(text).is_ok_and(|p| matches!(p.expr(), Expr::List(_) | Expr::ListComp(_)))
}

/// An expression that calls nothing (`f"{step} {loss:.3f}"`, `a + 1`): evaluating it on one
/// rank only, or twice, changes nothing.
fn is_call_free(text: &str) -> bool {
    ruff_python_parser::parse_expression(text).is_ok_and(|p| calls_nothing(p.expr()))
}

/// An expression without calls, awaits, yields or assignments: evaluating it has no effect.
pub fn calls_nothing(expr: &Expr) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Calls(bool);
    impl<'a> Visitor<'a> for Calls {
        fn visit_expr(&mut self, e: &'a Expr) {
            self.0 |=
                matches!(e, Expr::Call(_) | Expr::Await(_) | Expr::Yield(_) | Expr::YieldFrom(_) | Expr::Named(_));
            visitor::walk_expr(self, e);
        }
    }
    let mut calls = Calls(false);
    calls.visit_expr(expr);
    !calls.0
}

/// A name or a dotted attribute of one (`xm.REDUCE_SUM`, `t`, `self.total`): a reference, not a literal.
fn is_name(text: &str) -> bool {
    fn name(e: &Expr) -> bool {
        match e {
            Expr::Name(_) => true,
            Expr::Attribute(a) => name(&a.value),
            _ => false,
        }
    }
    ruff_python_parser::parse_expression(text).is_ok_and(|p| name(p.expr()))
}

/// A tuple or list literal whose first item is not `None` and whose others are (`("data", None)`):
/// a partition spec that splits dim 0 only.
fn splits_dim0_only(text: &str) -> bool {
    let Ok(parsed) = ruff_python_parser::parse_expression(text) else { return false };
    let items = match parsed.expr() {
        Expr::Tuple(t) => &t.elts,
        Expr::List(l) => &l.elts,
        _ => return false,
    };
    let none = |e: &Expr| e.is_none_literal_expr();
    items.first().is_some_and(|first| !none(first) && !first.is_starred_expr()) && items[1..].iter().all(none)
}

/// The DTensor placements a partition-spec literal maps to, written out as code: tensor dim
/// *d* split over mesh axis *a* is `Shard(d)` at *a*'s position, `Replicate()` elsewhere
/// (`(None, "model")` → `[Shard(1) if axis == "model" else Replicate() for axis in
/// mesh.mesh_dim_names]`). `None` for anything but a literal of names, indexes and `None`s.
pub fn dtensor_placements(text: &str) -> Option<String> {
    let parsed = ruff_python_parser::parse_expression(text).ok()?;
    let items = match parsed.expr() {
        Expr::Tuple(t) => &t.elts,
        Expr::List(l) => &l.elts,
        _ => return None,
    };
    let axis = |e: &Expr| match e {
        Expr::StringLiteral(s) => Some(format!("{:?}", s.value.to_str())),
        Expr::NumberLiteral(n) => match &n.value {
            ruff_python_ast::Number::Int(i) => Some(format!("mesh.mesh_dim_names[{i}]")),
            _ => None,
        },
        _ => None,
    };
    let mut cases = Vec::new();
    for (dim, item) in items.iter().enumerate() {
        let axes: Vec<&Expr> = match item {
            Expr::NoneLiteral(_) => continue,
            Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        for a in axes {
            cases.push(format!("Shard({dim}) if axis == {} else ", axis(a)?));
        }
    }
    (!cases.is_empty()).then(|| format!("[{}Replicate() for axis in mesh.mesh_dim_names]", cases.concat()))
}

/// A bare name (`batch`), which an assignment can rebind.
fn is_identifier(text: &str) -> bool {
    ruff_python_parser::parse_expression(text).is_ok_and(|p| matches!(p.expr(), Expr::Name(_)))
}

fn is_int_literal(text: &str) -> bool {
    ruff_python_parser::parse_expression(text)
        .is_ok_and(|p| matches!(p.expr(), Expr::NumberLiteral(n) if matches!(n.value, ruff_python_ast::Number::Int(_))))
}

fn is_plain_value(text: &str) -> bool {
    fn plain(e: &Expr) -> bool {
        match e {
            Expr::Name(_) | Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::BooleanLiteral(_) => true,
            Expr::Attribute(a) => plain(&a.value),
            Expr::Subscript(s) => plain(&s.value) && plain(&s.slice),
            Expr::UnaryOp(u) => plain(&u.operand),
            _ => false,
        }
    }
    ruff_python_parser::parse_expression(text).is_ok_and(|p| plain(p.expr()))
}

/// The value of a simple (unprefixed, single-part) string literal.
pub fn string_value(text: &str) -> Option<&str> {
    let text = text.trim();
    for q in ["\"\"\"", "'''", "\"", "'"] {
        if text.len() >= 2 * q.len() && text.starts_with(q) && text.ends_with(q) {
            let inner = &text[q.len()..text.len() - q.len()];
            if !inner.contains(['\\', '\'', '"']) {
                return Some(inner);
            }
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_parses_defaults_and_star() {
        let s = Signature::parse("value, dim=0, *, groups=None, **kw").unwrap();
        let kinds: Vec<_> = s.params.iter().map(|p| (p.name.as_str(), p.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("value", ParamKind::Normal),
                ("dim", ParamKind::Normal),
                ("groups", ParamKind::KeywordOnly),
                ("kw", ParamKind::VarKeywords)
            ]
        );
        assert!(Signature::parse("a, b c").is_err());
    }

    #[test]
    fn template_placeholders() {
        let t = Template::parse("{@torch}.compile({f}, backend=\"tpu\"{full_graph:kw=fullgraph}) {{x}}").unwrap();
        assert_eq!(t.params().collect::<Vec<_>>(), ["f", "full_graph"]);
        assert!(Template::parse("{unclosed").is_err());
        assert!(Template::parse("{a b}").is_err());
        assert!(Template::parse("x }").is_err());
    }

    #[test]
    fn splat_spreads_literals_and_stars_the_rest() {
        assert_eq!(splat("(step, loss)"), "step, loss");
        assert_eq!(splat("[x]"), "x");
        assert_eq!(splat("()"), "");
        assert_eq!(splat("args"), "*args");
        assert_eq!(splat("(a, *rest)"), "*(a, *rest)");
    }

    #[test]
    fn int_literals_are_counts_and_names_are_not() {
        let int = [Some("$int".to_string())];
        assert!(arg_matches(Some("8"), &int));
        assert!(!arg_matches(Some("None"), &int));
        assert!(!arg_matches(Some("flags.num_cores"), &int));
        assert!(!arg_matches(Some("8.0"), &int));
        assert!(!arg_matches(None, &int));
        let name = [Some("$name".to_string())];
        assert!(arg_matches(Some("xm.REDUCE_SUM"), &name));
        assert!(arg_matches(Some("t"), &name));
        assert!(!arg_matches(Some("'sum'"), &name));
        assert!(!arg_matches(Some("[a, b]"), &name));
        let pure = [Some("$pure".to_string())];
        assert!(arg_matches(Some("f'step {step} loss={loss:.3f}'"), &pure));
        assert!(!arg_matches(Some("f'{loss.item():.3f}'"), &pure));
        assert!(!arg_matches(Some("meter.update(x)"), &pure));
        let identifier = [Some("$identifier".to_string())];
        assert!(arg_matches(Some("batch"), &identifier));
        assert!(!arg_matches(Some("model.weight"), &identifier));
        let dim0 = [Some("$dim0_only".to_string())];
        assert!(arg_matches(Some("(\"data\", None, None)"), &dim0));
        assert!(arg_matches(Some("[(\"dcn\", \"data\")]"), &dim0));
        assert!(arg_matches(Some("(0,)"), &dim0));
        assert!(!arg_matches(Some("(None, \"model\")"), &dim0));
        assert!(!arg_matches(Some("(\"data\", \"model\")"), &dim0));
        assert!(!arg_matches(Some("spec"), &dim0));
        assert!(!arg_matches(Some("()"), &dim0));
    }

    #[test]
    fn operands_are_parenthesised_unless_atomic() {
        assert_eq!(callee("1.0 / n"), "(1.0 / n)");
        assert!(is_number("0.5"));
        assert!(!is_number("-0.5"));
        assert_eq!(callee("-0.5"), "(-0.5)");
        assert_eq!(callee("world.scale"), "world.scale");
    }

    #[test]
    fn callee_parenthesises_what_binds_looser_than_a_call() {
        assert_eq!(callee("lambda xs: xs[0]"), "(lambda xs: xs[0])");
        assert_eq!(callee("f if fast else g"), "(f if fast else g)");
        assert_eq!(callee("a or b"), "(a or b)");
        assert_eq!(callee("(lambda xs: xs[0])"), "(lambda xs: xs[0])");
        assert_eq!(callee("np.mean"), "np.mean");
        assert_eq!(callee("sum"), "sum");
        assert_eq!(callee("reducers[name]"), "reducers[name]");
        assert_eq!(callee("make_reducer(2)"), "make_reducer(2)");
    }

    #[test]
    fn when_compares_string_values() {
        assert!(arg_matches(Some("'xla'"), &[Some("\"xla\"".into())]));
        assert!(arg_matches(Some("'xla'"), &[Some("xla".into())]));
        assert!(arg_matches(None, &[None]));
        assert!(!arg_matches(Some("True"), &[None, Some("False".into())]));
        let value = [Some("$value".to_string())];
        assert!(arg_matches(Some("FLAGS['num_cores']"), &value));
        assert!(arg_matches(Some("args.nprocs"), &value));
        assert!(!arg_matches(Some("None"), &value));
        assert!(!arg_matches(Some("count_devices()"), &value));
        assert!(!arg_matches(None, &value));
    }
}
